package grade

import (
	"context"
	"maps"
	"slices"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/replay"
)

// learnKeys asks a fresh old build which keys (or resources) the steps
// from step from on touch, and which of them each writes: for judging the
// steps after the failure, and for where the variants go (the steps
// before it). Steps before from, and every step when the integration
// cannot tell, stay unknown (nil); a nil writes entry is unknown too (the
// step may write every key it touches, kavach.Abilities.Keys).
func learnKeys(ctx context.Context, steps []kavach.Step, from int, old kavach.Launch, opts Options) (keys, writes [][]string) {
	keys, writes = make([][]string, len(steps)), make([][]string, len(steps))
	finder := opts.Integration.Abilities().Keys
	if finder == nil || from > len(steps) {
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
	p, err := opts.Integration.Start(ctx, old)
	if err != nil {
		return keys, writes
	}
	defer p.Stop()
	k, w := finder(ctx, p.Addr(), reqs)
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
			if kavach.KeysRelate(a, b) {
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

// The rules that judge a step after the failure, and the reasons a
// difference there is the fix's (docs/diff.md, "After the failure").
const (
	// RuleObserved: every replay fingerprinted the state the step read;
	// the old build's and the new build's fingerprints decide.
	RuleObserved = "observed"
	// RuleInferred: no fingerprints; the keys a changed step wrote decide.
	RuleInferred = "inferred"

	ReasonInputs  = "inputs-differ"     // what the step read differs between the builds
	ReasonRefusal = "changed-refusal"   // both refuse a request of the failing command's family, on the same inputs
	ReasonShown   = "failure-shown"     // the recording or the old build showed a failure at the step
	ReasonDepends = "depends-on-change" // the step touches state a changed step wrote (inferred)
)

// DetailRefusedAfter is the detail of a finding after the failure where
// the new build refuses a request the old build answered.
const DetailRefusedAfter = "after the failing step, the new build refuses a request the old build answered"

// InputField is one field of a fingerprint on the two builds.
type InputField struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// Explained is a step after the failure whose difference from the
// recording the fix explains, with the reason, the rule that decided it,
// and the recorded, old and new answers side by side.
type Explained struct {
	Step           int            `json:"step"`
	Reason         string         `json:"reason"`
	Rule           string         `json:"rule"`
	Request        string         `json:"request"`
	Recorded       kavach.Outcome `json:"recorded"`
	Old            kavach.Outcome `json:"old"`
	New            kavach.Outcome `json:"new"`
	RecordedOutput []any          `json:"recorded_output,omitempty"`
	OldOutput      []any          `json:"old_output,omitempty"`
	NewOutput      []any          `json:"new_output,omitempty"`
	Diffs          []replay.Diff  `json:"diffs,omitempty"`
	// Inputs are the fingerprint fields that differ (inputs-differ), or
	// every field, equal on both builds (changed-refusal).
	Inputs []InputField `json:"inputs,omitempty"`
}

// Explain is the steps after the failure whose difference from the
// recording the fix explains, by step, derived from the evidence alone
// as Derive derives the findings: none when the old build does not
// reproduce the failure, or for a contract.
func Explain(ev Evidence) []Explained {
	if ev.Contract || notReproduced(ev) != "" {
		return nil
	}
	_, ex := afterFailure(ev, noiseOf(ev))
	return ex
}

// ReasonCount is how many explained steps have one reason.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// ExplainedBy counts explained steps by reason, in the reasons' order.
func ExplainedBy(ex []Explained) []ReasonCount {
	var out []ReasonCount
	for _, reason := range []string{ReasonInputs, ReasonRefusal, ReasonShown, ReasonDepends} {
		n := 0
		for _, e := range ex {
			if e.Reason == reason {
				n++
			}
		}
		if n > 0 {
			out = append(out, ReasonCount{Reason: reason, Count: n})
		}
	}
	return out
}

// compareInputs compares the fingerprints of what a step read on the old
// build (o) and the new (s), leaving out the fields that differ between
// the old build's own replays. ok is false when either has none: the
// step is then judged by the inferred rule.
func compareInputs(o, s StepEvidence) (differ, all []InputField, ok bool) {
	if o.Inputs == nil || s.Inputs == nil {
		return nil, nil, false
	}
	fields := map[string]bool{}
	for k := range o.Inputs {
		fields[k] = true
	}
	for k := range s.Inputs {
		fields[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if slices.Contains(s.InputsNoise, k) {
			continue
		}
		ov, oin := o.Inputs[k]
		nv, nin := s.Inputs[k]
		if !oin {
			ov = "(none)"
		}
		if !nin {
			nv = "(none)"
		}
		f := InputField{Field: k, Old: ov, New: nv}
		all = append(all, f)
		if ov != nv {
			differ = append(differ, f)
		}
	}
	return differ, all, true
}

// afterFailure judges the new build's steps after the failing step F
// (docs/design.md §4, step 3). A failure of the step's own is red: a crash,
// a hang the recording and the old build did not show, or a refusal
// where the old build answered (the recorded signature and invariants
// are Derive's). Otherwise a difference from the recording (noise
// excluded) is explained when the recording or the old build showed a
// failure there; then, where both builds fingerprinted what the step
// read (RuleObserved), when those inputs differ, or when both builds
// refuse a request of the failing command's family on the same inputs
// (a changed refusal); the same inputs with a different answer are
// diverged. Without fingerprints (RuleInferred), it is explained when
// the step touches state a changed step wrote — F itself, and every later
// step the fix explains — by its keys (unknown keys depend on every
// write, unknown writes explain everything; a read-only changed step
// explains nothing after it).
func afterFailure(ev Evidence, noise replay.Noise) ([]Finding, []Explained) {
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
	var explained []Explained
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
		differ, all, observed := compareInputs(o, s)
		rule := RuleInferred
		if observed {
			rule = RuleObserved
		}
		ex := Explained{Step: s.Step, Rule: rule, Request: s.Request, Recorded: s.Recorded, Old: o.Outcome, New: s.Outcome,
			RecordedOutput: s.RecordedOutput, OldOutput: o.Output, NewOutput: s.Output, Diffs: counted}
		diverged := func(detail string, inputs []InputField) {
			findings = append(findings, Finding{Parts: Parts{Kind: Diverged, Step: s.Step}, Request: s.Request,
				Expected: s.Recorded, Outcome: s.Outcome, Diffs: counted, Detail: detail, Rule: rule, Inputs: inputs})
		}
		showedFailure := broken(s.Recorded) || !oldRan || !o.Ran || broken(o.Outcome) ||
			recurs(ev.Failure, o.Outcome, o.Violated) || len(o.Violated) > 0 || ev.Failure.Reproduces(s.Recorded)
		switch {
		case showedFailure:
			ex.Reason = ReasonShown
		case s.Outcome.Kind == kavach.Error && o.Outcome.Kind == kavach.OK:
			diverged(DetailRefusedAfter, nil)
			continue
		case observed && len(differ) > 0:
			ex.Reason, ex.Inputs = ReasonInputs, differ
		case observed && s.Outcome.Kind == kavach.Error && o.Outcome.Kind == kavach.Error &&
			s.Command != "" && slices.Contains(ev.FailureFamily, s.Command):
			ex.Reason, ex.Inputs = ReasonRefusal, all
		case observed:
			diverged("after the failing step, the same inputs on both builds (the state the step read is equal) gave a different answer", all)
			continue
		default:
			depends := false
			for _, c := range changed {
				if dependsOn(s.Keys, s.KeysUnknown, c.writes, c.unknown) {
					depends = true
					break
				}
			}
			if !depends {
				diverged("after the failing step, a difference the fix does not explain: the step touches no state a changed step wrote", nil)
				continue
			}
			ex.Reason = ReasonDepends
		}
		change(s)
		explained = append(explained, ex)
	}
	return findings, explained
}
