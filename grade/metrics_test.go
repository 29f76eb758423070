package grade_test

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/internal/axumbuild"
	"github.com/kavach-dev/kavach/internal/gradetest"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/launch"
)

// metricsBuilds are the axum service with the split bug, the correct fix,
// and the correct fix with one other line of its metrics page wrong.
func metricsBuilds(t *testing.T) (old, fixed, itemsOff string) {
	dir := incidents.SplitPatches()
	bug, correct := filepath.Join(dir, "bug.patch"), filepath.Join(dir, "candidates", "correct.patch")
	off, _ := filepath.Abs(filepath.Join("..", "internal", "axumbuild", "testdata", "metrics-items-off.patch"))
	return axumbuild.MustBuild(t, bug), axumbuild.MustBuild(t, bug, correct), axumbuild.MustBuild(t, bug, correct, off)
}

func metricsPage(t *testing.T, addr string) string {
	t.Helper()
	c, err := launch.DialTimeout(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := incidents.SendHTTP(c, incidents.HTTPRequest{Method: "GET", Path: "/metrics"})
	if err != nil {
		t.Fatal(err)
	}
	return string(resp)
}

func TestProbesAreNoRequests(t *testing.T) {
	t.Parallel()
	// The launcher's readiness probe and the build's identity send the
	// service nothing it counts: the first request it sees is ours.
	old, _, _ := metricsBuilds(t)
	l := axum.Integration{}
	p, err := l.Start(context.Background(), kavach.Launch{Path: old, Args: []string{"--port", "{port}"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if v := l.Version(context.Background(), p.Addr()); v != "" {
		t.Errorf("Version = %q, want none (identity is the file's hash)", v)
	}
	if page := metricsPage(t, p.Addr()); !strings.Contains(page, "\naxum_service_requests_total 1\n") {
		t.Errorf("the service counted Kavach's probes:\n%s", page)
	}
}

func gradeHTTP(t *testing.T, fx *fixtures.Fixture, old, new string) *grade.Report {
	t.Helper()
	c := axum.Integration{}
	args := []string{"--port", "{port}"}
	rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old, Args: args}, kavach.Launch{Path: new, Args: args},
		grade.Options{Integration: c, Variants: 64, MinVariants: 10, Seed: 1, Memo: gradetest.OldReplays})
	if err != nil {
		t.Fatal(err)
	}
	if parts, _ := grade.Derive(rep.Evidence); parts.String() != rep.Verdict {
		t.Errorf("evidence gives %s, verdict %s", parts, rep.Verdict)
	}
	return rep
}

func TestMetricsPageInLaunchMode(t *testing.T) {
	t.Parallel()
	// Recorded with the old build started by kavach record: the metrics
	// page at step 4 counts the requests the service saw. Replays must see
	// the same page: no noise, the correct fix fixed, a fix that gets one
	// other line of the page wrong red at that step.
	old, fixed, itemsOff := metricsBuilds(t)
	out := filepath.Join(t.TempDir(), "metrics.kavach")
	if err := incidents.RecordHTTP(out, &kavach.Launch{Path: old, Args: []string{"--port", "{port}"}}, "", incidents.SplitMetrics); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	rep := gradeHTTP(t, fx, old, fixed)
	if rep.Verdict != "fixed" || len(rep.Evidence.Noise) != 0 {
		t.Fatalf("correct fix: %s with noise %+v, want fixed with none; findings %+v", rep.Verdict, rep.Evidence.Noise, rep.Findings)
	}
	bad := gradeHTTP(t, fx, old, itemsOff)
	if bad.Verdict != "diverged@4" || len(bad.Findings[0].Diffs) != 1 || !strings.HasSuffix(bad.Findings[0].Diffs[0].Path, ":2") {
		t.Errorf("fix with the items gauge off: %s, findings %+v; want diverged@4 at the gauge's token", bad.Verdict, bad.Findings)
	}
}

func TestMetricsNoiseIsOneToken(t *testing.T) {
	t.Parallel()
	// Recorded in front of a service that had served three requests
	// before the recording: its request counters differ from any replay's.
	// Those tokens are noise, and nothing else of the page: the fix that
	// gets the items gauge wrong is still red.
	old, fixed, itemsOff := metricsBuilds(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	ln.Close()
	srv := exec.CommandContext(ctx, old, "--port", port)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Wait()
	defer cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			for i := 0; i < 3; i++ {
				incidents.SendHTTP(c, incidents.HTTPRequest{Method: "GET", Path: "/health"})
			}
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	out := filepath.Join(t.TempDir(), "metrics.kavach")
	if err := incidents.RecordHTTP(out, nil, addr, incidents.SplitMetrics); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	rep := gradeHTTP(t, fx, old, fixed)
	if rep.Verdict != "fixed" {
		t.Fatalf("correct fix: %s, want fixed; findings %+v", rep.Verdict, rep.Findings)
	}
	for _, n := range rep.Evidence.Noise {
		if n.Step != 4 || !strings.HasPrefix(n.Path, "reply[0].body:") || strings.Count(n.Path, ":") != 2 || len(n.Values) < 2 {
			t.Errorf("noise %+v: want tokens of step 4's body only, with the values seen", n)
		}
	}
	if len(rep.Evidence.Noise) == 0 {
		t.Error("no noise: the counters were expected to differ from the recording")
	}
	if bad := gradeHTTP(t, fx, old, itemsOff); bad.Verdict != "diverged@4" {
		t.Errorf("fix with the items gauge off: %s, want diverged@4 (the whole page as noise would hide it); findings %+v", bad.Verdict, bad.Findings)
	}
}
