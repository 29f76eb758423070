// Command htmlbig writes a large report for bench/html-report.sh: a
// fixture of N steps (100,000 by default) on 8 connections, with bursts
// and quiet stretches (clock jumps), errors here and there, a crash at the
// failing step, a step that diverged before it, noise fields and 64
// variants: the shape of a real report, at a size no test grades.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/replay"
)

func main() {
	n := flag.Int("steps", 100_000, "steps in the fixture")
	out := flag.String("out", "big.json", "write the report to `FILE`")
	flag.Parse()
	if err := write(*n, *out); err != nil {
		fmt.Fprintln(os.Stderr, "htmlbig:", err)
		os.Exit(1)
	}
}

func write(n int, out string) error {
	rng := rand.New(rand.NewPCG(1, 2))
	F, D := n*9/10, n/2+1
	ok := kavach.Outcome{Kind: kavach.OK}
	errOut := kavach.Outcome{Kind: kavach.Error, Class: "ERR", Detail: "ERR value is not an integer or out of range"}
	crash := kavach.Outcome{Kind: kavach.Crash, Detail: "connection closed by the build"}
	ev := grade.Evidence{Failure: kavach.Failure{Step: F, Oracle: kavach.Oracle{Kind: kavach.Crash}, Signature: "crash"},
		Old: grade.OldEvidence{Runs: 3, Clock: "virtual"}, New: grade.NewEvidence{Clock: "virtual"},
		Noise: []replay.NoiseField{}, Invariants: []grade.InvariantEvidence{{Name: "ttl-bound", Held: true}}}
	var at int64
	for i := 1; i <= n; i++ {
		at += int64(50 + rng.IntN(400))
		if rng.IntN(5000) == 0 {
			at += int64(1+rng.IntN(600)) * 1_000_000 // a quiet stretch: a clock jump
		}
		rec := ok
		out := []any{fmt.Sprintf("value-%d", i)}
		if rng.IntN(100) == 0 {
			rec, out = errOut, []any{"ERR value is not an integer or out of range"}
		}
		if i == F {
			rec, out = crash, nil
		}
		s := grade.StepEvidence{Step: i, Request: fmt.Sprintf("GET key:%d", i%977), Ran: true, Recorded: rec, Outcome: rec,
			Output: out, Conn: uint64(1 + rng.IntN(8)), AtUS: at}
		if i%1000 == 0 {
			p := "reply[0]"
			ev.Noise = append(ev.Noise, replay.NoiseField{Step: i, Path: p, Values: []string{`"a"`, `"b"`}, Differed: 2, Of: 3})
			s.Diffs = []replay.Diff{{Step: i, Path: p, Want: `"a"`, Got: `"c"`}}
		}
		o := s
		o.Output, o.Diffs, o.Conn, o.AtUS = nil, nil, 0, 0
		if i == D {
			s.Diffs = []replay.Diff{{Step: i, Path: "reply[0]", Want: fmt.Sprintf("%q", out[0]), Got: `"other"`}}
			s.RecordedOutput, s.Output = out, []any{"other"}
		}
		if i == F {
			s.Outcome = ok
			s.Output = []any{"fixed"}
		}
		ev.Old.Steps = append(ev.Old.Steps, o)
		ev.New.Steps = append(ev.New.Steps, s)
	}
	ev.Variants = grade.VariantsEvidence{Generated: 48, Min: 10, List: []grade.VariantEvidence{}}
	for k := 1; k <= 64; k++ {
		v := grade.VariantEvidence{K: k, Kind: "field", Description: fmt.Sprintf("step %d: argument 1 (key) changed, variant %d", F, k),
			Kept: k%3 != 0, OldStep: F, OldOutcome: crash, NewOutcome: ok}
		if v.Kept {
			ev.Variants.Reproducing++
			ev.Variants.Passing++
		}
		ev.Variants.List = append(ev.Variants.List, v)
	}
	parts, findings := grade.Derive(ev)
	rep := grade.Report{SchemaVersion: grade.SchemaVersion, Verdict: parts.String(), Parts: parts, Findings: findings, Evidence: ev,
		Fixture:       grade.Fixture{Path: "big.kavach", SHA256: "00", Protocol: "resp", Steps: n, Failure: &ev.Failure},
		Builds:        grade.Builds{Old: grade.Build{Path: "redis-old"}, New: grade.Build{Path: "redis-new"}},
		KavachVersion: kavach.Version, Options: grade.Settings{Variants: 64, MinVariants: 10, Seed: 1}}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
