package grade_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/gradetest"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/launch"
)

// gradeContained diffs new against fx as kavach diff does, with a few
// variants, and checks that the report's evidence gives its verdict again
// (through JSON, as kavach verdict reads it).
func gradeContained(t *testing.T, fx *fixtures.Fixture, old, new string) *grade.Report {
	t.Helper()
	c := redis.Integration{}
	rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: new},
		grade.Options{Integration: c, Seed: 1, Variants: 8, MinVariants: 1})
	if err != nil {
		t.Fatal(err)
	}
	back := gradetest.ReadBack(t, rep)
	if back.Network != rep.Network {
		t.Errorf("network %q read back as %q", rep.Network, back.Network)
	}
	return rep
}

// TestContainedDiff: a fixture that rebinds the build to every address,
// moves its port and MIGRATEs a key to a listener, graded with network
// namespaces refused (KAVACH_NO_NETNS): those steps are contained — not
// compared, neither divergence nor failure — and the report says so and
// which network mode ran. The build against itself holds, as it does
// isolated; a planted STRLEN fault after the contained steps is still
// red; and a failure marked at a contained step is unverified(contained).
func TestContainedDiff(t *testing.T) {
	if launch.Isolation() != "netns" {
		// Recording this fixture sends its requests: only in a namespace.
		t.Skipf("builds are not isolated here (%s): recording the hostile fixture would rebind a build on this machine", launch.IsolationReason())
	}
	build := redisbuild.MustBuild(t)
	strlen := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenBroken)...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	lport := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	session := [][]string{
		{"SET", "greeting", "hello world"},
		{"CONFIG", "SET", "bind", "0.0.0.0 ::"},
		{"CONFIG", "SET", "port", "6379"},
		{"MIGRATE", "127.0.0.1", lport, "greeting", "0", "1000"},
		{"STRLEN", "greeting"},
		{"GET", "greeting"},
	}
	fx := recordContract(t, build, session) // recorded isolated: the MIGRATE reached nothing

	isolated := gradeContained(t, fx, build, build)
	if isolated.Verdict != grade.Held || isolated.Network != "isolated" {
		t.Fatalf("isolated: %s, network %q: want held, isolated", isolated.Verdict, isolated.Network)
	}

	t.Setenv("KAVACH_NO_NETNS", "1")
	want := "contained (namespaces refused: KAVACH_NO_NETNS is set)"
	rep := gradeContained(t, fx, build, build)
	if rep.Verdict != grade.Held || rep.Network != want {
		t.Errorf("contained: %s, network %q: want held, %q (findings %+v)", rep.Verdict, rep.Network, want, rep.Findings)
	}
	for _, steps := range [][]grade.StepEvidence{rep.Evidence.Old.Steps, rep.Evidence.New.Steps} {
		for _, s := range steps {
			if (s.Contained != "") != (s.Step >= 2 && s.Step <= 4) {
				t.Errorf("step %d (%s): contained %q", s.Step, s.Request, s.Contained)
			}
		}
	}
	if ck := rep.Checked(); !slices.Equal(ck.Contained, []int{2, 3, 4}) || ck.StepsCompared != 3 {
		t.Errorf("checked: contained %v, compared %d: want [2 3 4], 3", ck.Contained, ck.StepsCompared)
	}

	// Planted: STRLEN one short, after the contained steps: still red.
	if red := gradeContained(t, fx, build, strlen); red.Verdict != "diverged@5" {
		t.Errorf("STRLEN off by one after contained steps: %s, want diverged@5", red.Verdict)
	}

	// The failure marked at the contained MIGRATE: Kavach answered it,
	// so nothing can be said of it.
	path := filepath.Join(t.TempDir(), "migrate.kavach")
	data, err := os.ReadFile(fx.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := incidents.MarkFailure(path, 4, "error:IOERR"); err != nil {
		t.Fatal(err)
	}
	marked, err := fixtures.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	un := gradeContained(t, marked, build, build)
	if !strings.HasPrefix(un.Verdict, "unverified(contained: step 4 (MIGRATE") {
		t.Errorf("failure at a contained step: %s, want unverified(contained: step 4 ...)", un.Verdict)
	}
	if len(accepted) > 0 {
		t.Errorf("the fixture's MIGRATE target got %d connections", len(accepted))
	}
}
