package grade

import (
	"context"
	"strings"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/launch"
	"github.com/kavach-dev/kavach/replay"
)

// learnKeys asks a fresh old build which keys (or resources) the steps
// from step from on touch, and which of them each writes: for judging the
// steps after the failure, and for where the variants go (the steps
// before it). Steps before from, and every step when the integration
// cannot tell, stay unknown (nil); a nil writes entry is unknown too (the
// step may write every key it touches, kavach.KeyFinder).
func learnKeys(ctx context.Context, steps []kavach.Step, from int, old kavach.Launch, opts Options) (keys, writes [][]string) {
	keys, writes = make([][]string, len(steps)), make([][]string, len(steps))
	finder, ok := opts.Launcher.(kavach.KeyFinder)
	if !ok || from > len(steps) {
		return keys, writes
	}
	var reqs [][]byte
	for _, s := range steps[from-1:] {
		reqs = append(reqs, s.Request.Data)
	}
	if !opts.Pool.acquire(ctx) {
		return keys, writes
	}
	defer opts.Pool.release()
	p, err := launch.Start(ctx, opts.Launcher, old)
	if err != nil {
		return keys, writes
	}
	defer p.Stop()
	k, w := finder.Keys(ctx, p.Addr(), reqs)
	for i := range k {
		if from-1+i < len(keys) {
			keys[from-1+i] = k[i]
			if i < len(w) {
				writes[from-1+i] = w[i]
			}
		}
	}
	return keys, writes
}

// relate reports whether two keys name the same state: equal, or one a
// path and the other a path below it ("/items" and "/items/2").
func relate(a, b string) bool {
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	return strings.HasPrefix(a, "/") && strings.HasPrefix(b, a) && (strings.HasSuffix(a, "/") || b[len(a)] == '/')
}

// dependsOn reports whether a step with keys k depends on state a step
// writing keys c changed. Unknown keys (kUnknown) depend on every write;
// unknown writes (cUnknown) may have changed anything. A step that wrote
// nothing changed no state.
func dependsOn(k []string, kUnknown bool, c []string, cUnknown bool) bool {
	if cUnknown {
		return true
	}
	if len(c) == 0 {
		return false
	}
	if kUnknown {
		return true
	}
	for _, a := range k {
		for _, b := range c {
			if relate(a, b) {
				return true
			}
		}
	}
	return false
}

// written is what a step may have written: its Writes when the
// integration told them (WritesKnown), else every key it touches
// (unknown when its keys are), as a report from before writes were told
// from reads.
func written(s StepEvidence) (keys []string, unknown bool) {
	if s.WritesKnown {
		return s.Writes, false
	}
	return s.Keys, s.KeysUnknown
}

// afterFailure judges the new build's steps after the failing step F
// (docs/design.md §4, step 3): a crash there is a finding; so is a hang the
// recording and the old build did not show; a difference from the
// recording (noise excluded) is a finding unless the fix explains it: the
// recording or the old build showed the failure at that step (a crash or
// hang, the signature, an invariant violated), or the step touches state a
// changed step wrote — F itself, and every later step the fix explains —
// by its keys (unknown keys depend on every write, unknown writes explain
// everything). A read-only changed step explains nothing after it.
func afterFailure(ev Evidence, noise replay.Noise) []Finding {
	F := ev.Failure.Step
	old := map[int]StepEvidence{}
	for _, s := range ev.Old.Steps {
		old[s.Step] = s
	}
	type changedStep struct {
		writes  []string
		unknown bool
	}
	var changed []changedStep
	change := func(s StepEvidence) {
		w, u := written(s)
		changed = append(changed, changedStep{w, u})
	}
	var findings []Finding
	for _, s := range ev.New.Steps {
		if s.Step == F {
			change(s)
		}
		if s.Step <= F || !s.Ran {
			continue
		}
		o, oldRan := old[s.Step]
		broken := func(out kavach.Outcome) bool { return out.Kind == kavach.Crash || out.Kind == kavach.Hang }
		switch {
		case s.Outcome.Kind == kavach.Crash && !ev.Failure.Reproduces(s.Outcome):
			findings = append(findings, Finding{Parts: Parts{Kind: Diverged, Step: s.Step}, Request: s.Request,
				Expected: s.Recorded, Outcome: s.Outcome, Detail: "the new build crashed after the failing step: " + s.Outcome.Detail})
			continue
		case s.Outcome.Kind == kavach.Hang && !ev.Failure.Reproduces(s.Outcome) &&
			!(s.Recorded.Kind == kavach.Hang && oldRan && o.Ran && o.Outcome.Kind == kavach.Hang):
			findings = append(findings, Finding{Parts: Parts{Kind: Diverged, Step: s.Step}, Request: s.Request,
				Expected: s.Recorded, Outcome: s.Outcome, Detail: "the new build hung after the failing step: " + s.Outcome.Detail})
			continue
		}
		counted, _ := noise.Split(s.Diffs)
		if len(counted) == 0 {
			continue
		}
		showedFailure := broken(s.Recorded) || !oldRan || !o.Ran || broken(o.Outcome) ||
			recurs(ev.Failure, o.Outcome, o.Violated) || len(o.Violated) > 0 || ev.Failure.Reproduces(s.Recorded)
		depends := false
		for _, c := range changed {
			if dependsOn(s.Keys, s.KeysUnknown, c.writes, c.unknown) {
				depends = true
				break
			}
		}
		if showedFailure || depends {
			change(s)
			continue
		}
		findings = append(findings, Finding{Parts: Parts{Kind: Diverged, Step: s.Step}, Request: s.Request,
			Expected: s.Recorded, Outcome: s.Outcome, Diffs: counted,
			Detail: "after the failing step, a difference the fix does not explain: the step touches no state a changed step wrote"})
	}
	return findings
}
