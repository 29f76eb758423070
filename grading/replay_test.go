package grading_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

// TestReplayGetrange replays the GETRANGE incident through the use case
// alone, as kavach replay does: the old build it was recorded on
// reproduces it (the crash recurs at step 5), the build without the bug
// does not (from step 5), and both renderings say so: the table's last
// line and the JSON's verification.
func TestReplayGetrange(t *testing.T) {
	old, fixture := getrange(t)
	fixed := redisbuild.MustBuild(t)
	for _, tc := range []struct {
		build, result string
		reproduced    bool
	}{
		{old, "result    reproduced (", true},
		{fixed, "result    not reproduced, from step 5 (", false},
	} {
		r := grading.ReplayRequest{Build: tc.build, Fixture: fixture, Runs: 2,
			StepTimeout: 5 * time.Second, StartTimeout: 10 * time.Second}
		res, err := grading.Replay(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Close()
		if res.Reproduced() != tc.reproduced {
			t.Errorf("%s: reproduced %v, want %v: %+v", tc.build, res.Reproduced(), tc.reproduced, res.Verification)
		}
		var out bytes.Buffer
		if err := res.Print(&out); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if !strings.HasPrefix(lines[0], "replay    "+tc.build) || !strings.HasPrefix(lines[len(lines)-1], tc.result) {
			t.Errorf("%s: the table:\n%s", tc.build, out.String())
		}
		if err := res.PrintJSON(&out); err == nil {
			t.Errorf("%s: PrintJSON of a replay that did not ask for JSON: no error", tc.build)
		}

		r.JSON = true
		res, err = grading.Replay(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Close()
		out.Reset()
		if err := res.PrintJSON(&out); err != nil {
			t.Fatal(err)
		}
		var js struct {
			Traces       []replay.Trace      `json:"traces"`
			Verification replay.Verification `json:"verification"`
		}
		if err := json.Unmarshal(out.Bytes(), &js); err != nil {
			t.Fatalf("%s: %v\n%s", tc.build, err, out.String())
		}
		if len(js.Traces) != 2 || js.Verification.Reproduced != tc.reproduced || len(js.Verification.Steps) != len(js.Traces[0].Steps) {
			t.Errorf("%s: JSON with %d traces, reproduced %v, %d steps judged: %s", tc.build, len(js.Traces), js.Verification.Reproduced, len(js.Verification.Steps), out.String())
		}
	}
}

// TestReplayRefusesBadRequests: a request that means nothing is refused
// before any build starts, as a usage mistake.
func TestReplayRefusesBadRequests(t *testing.T) {
	_, fixture := getrange(t)
	for _, r := range []grading.ReplayRequest{
		{Build: "/bin/true", Fixture: fixture, Runs: 0, StepTimeout: time.Second, StartTimeout: time.Second},
		{Build: "/bin/true", Fixture: fixture, Runs: 1, StepTimeout: 0, StartTimeout: time.Second},
	} {
		res, err := grading.Replay(context.Background(), r)
		var ue *grading.UsageError
		if res != nil || !errors.As(err, &ue) {
			t.Errorf("runs %d, step timeout %v: %v, want a usage error", r.Runs, r.StepTimeout, err)
		}
	}
}
