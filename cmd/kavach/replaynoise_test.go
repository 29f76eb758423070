package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

// TestReplayListsDiffsNoise: issue 24's session (a key set to expire, a
// key holding 1, a pause, the expired key read, OBJECT IDLETIME of the
// other), recorded ten times through the real proxy with a stock client
// on a server that ran two seconds before each recording began. OBJECT
// IDLETIME of a shared integer is the server's age, so every recording's
// answer there is larger than any replay's (two seconds, not one: the
// recording server's cached clock can lag a second boundary while ten
// recordings share two cores, and one second ahead then read as none,
// once in about four hundred recordings): kavach diff of the build
// against itself finds that field noise (its old replays differ from the
// recording there) and says held, and kavach replay of the build, judged
// by the same rule with the same noise, reproduces each recording and
// lists that same noise. Before, replay found noise only between its own
// runs, which agree, and called the step not reproduced.
func TestReplayListsDiffsNoise(t *testing.T) {
	build := redisbuild.MustBuild(t)
	const n = 10
	paths := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fx, err := incidents.RecordClientsAged(t.TempDir(), build, 2*time.Second, incidents.IdleAfterExpiry)
			if err == nil {
				paths[i] = fx.Path
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("recording %d: %v", i+1, err)
		}
	}
	for i, path := range paths {
		t.Run(fmt.Sprint(i+1), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), []string{"kavach", "replay", "--json", build, path}, nil, &out, &errOut)
			var rp struct {
				Noise        []replay.NoiseField `json:"noise"`
				Verification replay.Verification `json:"verification"`
			}
			if err := json.Unmarshal(out.Bytes(), &rp); err != nil {
				t.Fatalf("kavach replay exited %d: %v\n%s", code, err, errOut.String())
			}
			if code != 0 || !rp.Verification.Reproduced {
				t.Errorf("kavach replay exited %d, reproduced %v: %+v", code, rp.Verification.Reproduced, rp.Verification.Steps)
			}
			// The IDLETIME is the last step: noise, on every recording.
			steps := rp.Verification.Steps
			if last := steps[len(steps)-1]; last.Status != replay.StatusNoise {
				t.Errorf("OBJECT IDLETIME of the shared integer: %s, want noise: %+v", last.Status, last)
			}

			out.Reset()
			errOut.Reset()
			report := filepath.Join(t.TempDir(), "report.json")
			code = run(context.Background(), []string{"kavach", "diff", "--json", "--variants", "0", "--min-variants", "0", "--out", report,
				build, build, path}, nil, &out, &errOut)
			var rep grade.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("kavach diff exited %d: %v\n%s", code, err, errOut.String())
			}
			if code != 0 || rep.Verdict != grade.Held {
				t.Errorf("kavach diff of the build against itself: exit %d, %s", code, rep.Verdict)
			}
			if want, got := fields(rep.Evidence.Noise), fields(rp.Noise); !slices.Equal(want, got) {
				t.Errorf("kavach replay lists noise %v, kavach diff finds %v", got, want)
			}
		})
	}
}

// fields are noise fields as "step N PATH, differed in D of O".
func fields(noise []replay.NoiseField) []string {
	var out []string
	for _, f := range noise {
		out = append(out, fmt.Sprintf("step %d %s, differed in %d of %d", f.Step, f.Path, f.Differed, f.Of))
	}
	return out
}
