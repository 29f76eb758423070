package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

// kavach replay --json of three runs plans the recording once (per
// batching), and reads each run's spill back once:
// the noise, the judgments and every run's steps are made in one pass
// (before, each trace's steps took a pass that read every spill: 15
// reads for 3 runs). The output is still one JSON object with every
// run's steps and the verification's.
func TestReplayJSONReadsEachSpillOnce(t *testing.T) {
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOld)...)
	fixture := filepath.Join(t.TempDir(), "getrange.kavach")
	if err := incidents.RecordGetrange(fixture, old); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	plans, reads := replay.Counts()
	if err := newApp(nil, &out, &errs).Run([]string{"kavach", "replay", "--json", "--runs", "3", old, fixture}); err != nil {
		t.Fatalf("%v: %s", err, errs.String())
	}
	plans2, reads2 := replay.Counts()
	if got := reads2 - reads; got != 3 {
		t.Errorf("the spills of 3 runs were read %d times, want 3", got)
	}
	// The runs share their plans: one with batches, and one without when
	// the build died with a batch unanswered (each run then replays
	// again without).
	if got := plans2 - plans; got > 2 {
		t.Errorf("3 runs made %d plans, want at most 2", got)
	}
	var v struct {
		Noise  []any `json:"noise"`
		Traces []struct {
			Steps []struct {
				N int `json:"step"`
			} `json:"steps"`
		} `json:"traces"`
		Verification struct {
			Reproduced bool `json:"reproduced"`
			Steps      []struct {
				Status string `json:"status"`
			} `json:"steps"`
		} `json:"verification"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if len(v.Traces) != 3 || !v.Verification.Reproduced || len(v.Verification.Steps) != 5 || v.Verification.Steps[4].Status != "reproduced" {
		t.Fatalf("output %s", out.String())
	}
	for i, tr := range v.Traces {
		if len(tr.Steps) != 5 || tr.Steps[0].N != 1 || tr.Steps[4].N != 5 {
			t.Errorf("trace %d: steps %+v", i+1, tr.Steps)
		}
	}
}
