package grade

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/replay"
)

// Every rule that decides a verdict is in this file, each a pure function
// of a report's evidence: what `kavach diff` decides while it runs,
// `kavach verdict` decides again from the report. docs/design.md, "How a
// verdict is made", lists them with what decides each: an observation
// (asking a build, replaying it, fingerprinting it) or an inference.

// Derive computes the findings and the headline verdict from evidence
// alone (docs/design.md §3): the old build must reproduce the failure, else
// unverified(not-reproduced: ...); findings on the fixture's own replay,
// the earliest by step (at one step: diverged, then still_failing, then
// invariant_violated); else the failing variant with the lowest K; else
// unverified when fewer than the minimum variants reproduce; else
// unverified(below-floor: ...) when graded below the fixture's floor;
// else fixed.
func Derive(ev Evidence) (Verdict, []Finding) {
	if ev.Contract {
		return deriveContract(ev)
	}
	if reason := containedFailure(ev); reason != "" {
		return Verdict{Kind: Unverified, Reason: reasonContained + ": " + reason}, nil
	}
	if f, ok := missingState(ev, ev.Failure.Step); ok {
		return Verdict{Kind: Unverified, Reason: reasonMissingState + ": " + replay.MissingStateReason(f)}, nil
	}
	if reason := orderUnknown(ev); reason != "" {
		return Verdict{Kind: Unverified, Reason: reasonOrderUnknown + ": " + reason}, nil
	}
	if reason := notReproduced(ev); reason != "" {
		return Verdict{Kind: Unverified, Reason: reasonNotReproduce + ": " + reason}, nil
	}
	noise := noiseOf(ev)
	F := ev.Failure.Step
	var findings []Finding
	for _, s := range ev.New.Steps {
		if !s.Ran || s.uncompared() {
			continue
		}
		if s.Step < F {
			counted, _ := noise.Split(s.Diffs)
			if len(counted) > 0 {
				findings = append(findings, Finding{Verdict: Verdict{Kind: Diverged, Step: s.Step}, Request: s.Request,
					Expected: s.Recorded, Outcome: s.Outcome, Diffs: counted, Detail: s.Outcome.Detail})
			}
			continue
		}
		// An invariant failure recurring at another step is that invariant
		// violated there (invariant_violated), not the failing step still failing.
		// At the failing step the oracle decides (an oracle "error" fires
		// on any error there, whatever the signature's message); later,
		// the signature (the failure recurring, moved).
		again := recurs(ev.Failure, s.Outcome, s.Violated) && (ev.Failure.Oracle.Invariant == "" || s.Step == F) ||
			s.Step == F && ev.Failure.Oracle.Fires(s.Outcome)
		if again || s.Step == F && (s.Outcome.Kind == kavach.Crash || s.Outcome.Kind == kavach.Hang) {
			findings = append(findings, Finding{Verdict: Verdict{Kind: StillFailing, Step: s.Step}, Request: s.Request,
				Expected: s.Recorded, Outcome: s.Outcome, Detail: s.Outcome.Detail})
		}
	}
	after, _ := afterFailure(ev, noise)
	findings = append(findings, after...)
	findings = ordered(findings, ev, Diverged, StillFailing, InvariantViolated)
	if len(findings) > 0 {
		return findings[0].Verdict, findings
	}
	for _, inv := range ev.Invariants {
		if inv.TooCostly != "" {
			// Not checked past where the budget ran out: nothing says
			// they hold there.
			return Verdict{Kind: Unverified, Reason: reasonTooCostly + ": " + inv.TooCostly}, findings
		}
	}
	for _, inv := range ev.Invariants {
		if slices.Contains(inv.NotEvaluable, F) {
			// The message says why at the first step it was not evaluable,
			// which may be before the failing step: the reason names F.
			msg := inv.NotEvaluableMessage
			if inv.NotEvaluable[0] != F || msg == "" {
				msg = fmt.Sprintf("%s: not evaluable at step %d", inv.Name, F)
				if inv.NotEvaluableMessage != "" {
					msg += fmt.Sprintf(" (first: %s)", inv.NotEvaluableMessage)
				}
			}
			return Verdict{Kind: Unverified, Reason: "not-evaluable: " + msg}, findings
		}
	}
	if v := ev.Variants; v.Reproducing < v.Min {
		return Verdict{Kind: Unverified, Reason: fmt.Sprintf("variants: %d of %d reproduce, need %d", v.Reproducing, v.Generated, v.Min)}, findings
	}
	// Graded more weakly than the fixture allows (--below-floor): the
	// checks passed, but not the ones the incident asks for.
	if below := ev.Floor.Below(); below != "" {
		return Verdict{Kind: Unverified, Reason: reasonBelowFloor + ": " + below}, findings
	}
	return Verdict{Kind: Fixed}, findings
}

// recurs reports whether the recorded failure happened again at a step:
// its invariant violated there, or its signature firing on the outcome.
func recurs(f kavach.Failure, out kavach.Outcome, violated []string) bool {
	if f.Oracle.Invariant != "" {
		return slices.Contains(violated, f.Oracle.Invariant)
	}
	return f.Reproduces(out)
}

// notReproduced says why the old build's replay does not reproduce the
// recording up to and including the failure, or "" if it does: every step
// before the failure with the recorded outcome, the failing step failing
// with the recorded signature.
func notReproduced(ev Evidence) string {
	F := ev.Failure.Step
	for _, s := range ev.Old.Steps {
		switch {
		case s.Step > F:
			return ""
		case !s.Ran:
			return fmt.Sprintf("the old build's replay stopped before step %d: %s", s.Step, ev.Old.Stopped)
		case s.uncompared():
			// Not compared (containedFailure has the failing step's case).
		case s.Step < F && (s.Outcome.Kind != s.Recorded.Kind || s.Outcome.Class != s.Recorded.Class):
			return fmt.Sprintf("step %d gave %s on the old build, recorded %s", s.Step, s.Outcome, s.Recorded)
		case s.Step == F && ev.Failure.Oracle.Invariant != "" && slices.Contains(s.NotEvaluable, ev.Failure.Oracle.Invariant):
			return fmt.Sprintf("invariant %s is not evaluable at step %d on the old build", ev.Failure.Oracle.Invariant, F)
		case s.Step == F && !recurs(ev.Failure, s.Outcome, s.Violated):
			got := s.Outcome.String()
			if ev.Failure.Oracle.Invariant != "" {
				got = "no violation of " + ev.Failure.Oracle.Invariant
			}
			return fmt.Sprintf("step %d gave %s on the old build, recorded %s", F, got, ev.Failure.Signature)
		}
	}
	if len(ev.Old.Steps)+ev.Omitted < F {
		return fmt.Sprintf("the old build's replay has %d steps, the failure is at step %d", len(ev.Old.Steps)+ev.Omitted, F)
	}
	return ""
}

// missingState is, for a fixture that lacks the state of the service it
// was recorded in front of, the first field before step before (0: any)
// where the old build's replays all gave one value the recording did not
// have (replay.MissingState): the state it lacks, never noise, and never
// a verdict that grades the new build on it. Observed: the replays agree.
func missingState(ev Evidence, before int) (replay.NoiseField, bool) {
	if !ev.StateLacking {
		return replay.NoiseField{}, false
	}
	return replay.MissingState(ev.Noise, before)
}

// orderUnknown says where a build's answer differs from the recording at
// a step whose answer may depend on an order the recording could not know
// (Evidence.OrderUnknown), or "": a replay of the old build that differs
// there (noise included: the order may be what varies), or the new build
// differing there, the outcome or the output. Neither a regression nor a
// fix can be told from it.
func orderUnknown(ev Evidence) string {
	if len(ev.OrderUnknown) == 0 {
		return ""
	}
	at := func(n int) bool { _, ok := slices.BinarySearch(ev.OrderUnknown, n); return ok }
	first, who := 0, ""
	note := func(n int, build string) {
		if first == 0 || n < first {
			first, who = n, build
		}
	}
	for _, f := range ev.Noise {
		if at(f.Step) {
			note(f.Step, "the old build's replays")
		}
	}
	for _, s := range ev.Old.Steps {
		if at(s.Step) && s.Ran && !s.uncompared() && !sameKind(s.Outcome, s.Recorded) {
			note(s.Step, "the old build")
		}
	}
	for _, s := range ev.New.Steps {
		if at(s.Step) && s.Ran && !s.uncompared() && (!sameKind(s.Outcome, s.Recorded) || len(s.Diffs) > 0) {
			note(s.Step, "the new build")
		}
	}
	if first == 0 {
		return ""
	}
	return fmt.Sprintf("step %d differs from the recording on %s, and it may read what another client wrote in an order the recording could not know (kavach show lists the writes of other clients)", first, who)
}

// containedFailure says why the failing step was not compared, or "":
// Kavach withheld it (or its reply was known to differ) on the old build's
// replay or the new build's. Neither reproduced nor fixed can then be said.
func containedFailure(ev Evidence) string {
	F := ev.Failure.Step
	for _, steps := range [][]StepEvidence{ev.Old.Steps, ev.New.Steps} {
		for _, s := range steps {
			if s.Step == F && s.Contained != "" {
				return fmt.Sprintf("step %d (%s) was answered by Kavach, not the build: %s", F, s.Request, s.Contained)
			}
		}
	}
	return ""
}

// deriveContract derives a contract's verdict (a fixture with no failure,
// docs/contracts.md) from evidence alone: unverified(not-replayed: ...)
// when the old build does not replay its own recording; else findings on
// the fixture's own replay, the earliest by step — a crash or a hang the
// recording did not show, a step the new build did not reach, a declared
// invariant violated, a difference from the recording (noise excluded) —
// at one step the invariant first, as it names what is wrong; else the
// failing regression variant with the lowest K; else unverified when fewer
// than the minimum regression variants are handled by the old build, or
// when graded below the fixture's floor; else held.
//
// A step where the old build's replay violates an invariant (a feature's
// invariant, which the old build is expected not to meet) is not compared
// with the recording: the feature may rightly change its answer, and the
// invariant decides it instead.
func deriveContract(ev Evidence) (Verdict, []Finding) {
	if reason := notReplayed(ev); reason != "" {
		return Verdict{Kind: Unverified, Reason: "not-replayed: " + reason}, nil
	}
	if f, ok := missingState(ev, 0); ok {
		return Verdict{Kind: Unverified, Reason: reasonMissingState + ": " + replay.MissingStateReason(f)}, nil
	}
	if reason := orderUnknown(ev); reason != "" {
		return Verdict{Kind: Unverified, Reason: reasonOrderUnknown + ": " + reason}, nil
	}
	noise := noiseOf(ev)
	oldViolated := map[int]bool{}
	for _, s := range ev.Old.Steps {
		oldViolated[s.Step] = len(s.Violated) > 0
	}
	var findings []Finding
	for _, s := range ev.New.Steps {
		if !s.Ran {
			// The replay stopped early without a broken step to show
			// for it (a crash is the broken step's finding).
			if len(findings) == 0 || findings[len(findings)-1].Kind != Diverged || !broken(findings[len(findings)-1].Outcome) {
				findings = append(findings, Finding{Verdict: Verdict{Kind: Diverged, Step: s.Step}, Request: s.Request, Expected: s.Recorded,
					Outcome: kavach.Outcome{Kind: "not-run"}, Detail: "the new build's replay stopped before this step: " + ev.New.Stopped})
			}
			break
		}
		if s.uncompared() {
			continue // not compared: Kavach answered it, its reply was known to differ, or another client sent it
		}
		if broken(s.Outcome) && s.Outcome.Kind != s.Recorded.Kind {
			findings = append(findings, Finding{Verdict: Verdict{Kind: Diverged, Step: s.Step}, Request: s.Request, Expected: s.Recorded,
				Outcome: s.Outcome, Detail: fmt.Sprintf("the new build gave %s where the recording did not: %s", s.Outcome.Kind, s.Outcome.Detail)})
			continue
		}
		if oldViolated[s.Step] {
			continue
		}
		if counted, _ := noise.Split(s.Diffs); len(counted) > 0 {
			findings = append(findings, Finding{Verdict: Verdict{Kind: Diverged, Step: s.Step}, Request: s.Request,
				Expected: s.Recorded, Outcome: s.Outcome, Diffs: counted, Detail: s.Outcome.Detail})
		}
	}
	findings = ordered(findings, ev, InvariantViolated, Diverged)
	if len(findings) > 0 {
		return findings[0].Verdict, findings
	}
	if v := ev.Variants; v.Handled < v.Min {
		return Verdict{Kind: Unverified, Reason: fmt.Sprintf("variants: %d of %d regression variants handled by the old build, need %d", v.Handled, v.Regression, v.Min)}, findings
	}
	if below := ev.Floor.Below(); below != "" {
		return Verdict{Kind: Unverified, Reason: reasonBelowFloor + ": " + below}, findings
	}
	return Verdict{Kind: Held}, findings
}

// notReplayed says why the old build's replay does not replay its own
// recording, or "" if it does: every step run, each with the recorded
// outcome's kind and class (the rest of each output may differ: that is
// noise, learned from these very replays).
func notReplayed(ev Evidence) string {
	for _, s := range ev.Old.Steps {
		switch {
		case !s.Ran:
			return fmt.Sprintf("the old build's replay stopped before step %d: %s", s.Step, ev.Old.Stopped)
		case s.uncompared():
			// not compared
		case s.Outcome.Kind != s.Recorded.Kind || s.Outcome.Class != s.Recorded.Class:
			return fmt.Sprintf("step %d gave %s on the old build, recorded %s", s.Step, s.Outcome, s.Recorded)
		}
	}
	if len(ev.Old.Steps)+ev.Omitted == 0 {
		return "the old build's replay has no steps"
	}
	return ""
}

// broken reports whether an outcome is a crash or a hang.
func broken(o kavach.Outcome) bool { return o.Kind == kavach.Crash || o.Kind == kavach.Hang }

// variantFindings are the kept variants the new build failed, by K: they
// follow the findings on the fixture's own replay, for incidents and
// contracts alike.
func variantFindings(ev Evidence) []Finding {
	var out []Finding
	for _, v := range ev.Variants.List {
		if v.Kept && v.FailedStep > 0 {
			out = append(out, Finding{Verdict: Verdict{Kind: VariantFailed, Variant: v.K, Step: v.FailedStep},
				Detail: v.Description, Expected: v.OldOutcome, Outcome: v.NewOutcome, Diffs: v.Diffs})
		}
	}
	sortFindings(out, func(a, b Finding) bool { return a.Variant < b.Variant })
	return out
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
			findings = append(findings, Finding{Verdict: Verdict{Kind: Diverged, Step: s.Step}, Request: s.Request,
				Expected: s.Recorded, Outcome: s.Outcome, Detail: "the new build crashed after the failing step: " + s.Outcome.Detail})
			continue
		case s.Outcome.Kind == kavach.Hang && !ev.Failure.Reproduces(s.Outcome) &&
			!(s.Recorded.Kind == kavach.Hang && oldRan && o.Ran && o.Outcome.Kind == kavach.Hang):
			findings = append(findings, Finding{Verdict: Verdict{Kind: Diverged, Step: s.Step}, Request: s.Request,
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
			findings = append(findings, Finding{Verdict: Verdict{Kind: Diverged, Step: s.Step}, Request: s.Request,
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

// failsByAnswer reports whether out, a variant's answer at its varied
// failing request, is the recorded failure by the answer itself: the
// failure's oracle is an invariant that does not apply there (applied
// are the invariants that did), and out carries the signature of the
// recorded failing answer (answer), which was an error, a crash or a
// hang — not a plain answer, which says nothing alone (docs/variants.md,
// "Reproducing").
func failsByAnswer(f kavach.Failure, answer, out kavach.Outcome, applied []string) bool {
	if f.Oracle.Invariant == "" || slices.Contains(applied, f.Oracle.Invariant) {
		return false
	}
	switch answer.Kind {
	case kavach.Error, kavach.Crash, kavach.Hang:
		return kavach.ErrorSignature(out) == kavach.ErrorSignature(answer)
	}
	return false
}

// noiseOf is the evidence's noise fields as a replay.Noise.
func noiseOf(ev Evidence) replay.Noise {
	noise := replay.Noise{}
	for _, f := range ev.Noise {
		if noise[f.Step] == nil {
			noise[f.Step] = map[string]bool{}
		}
		noise[f.Step][f.Path] = true
	}
	return noise
}

// ordered adds to findings each invariant the new build broke, sorts them
// by step and, on one step, in the order of kinds, and puts the variants'
// findings after them: the first is the verdict.
func ordered(findings []Finding, ev Evidence, kinds ...string) []Finding {
	rank := func(kind string) int { return max(slices.Index(kinds, kind), 0) } // another kind ranks as the first
	for _, inv := range ev.Invariants {
		if !inv.Held {
			findings = append(findings, Finding{Verdict: Verdict{Kind: InvariantViolated, Step: inv.FirstStep, Invariant: inv.Name}, Detail: inv.Message,
				Outcome: outcomeAt(ev.New.Steps, inv.FirstStep)})
		}
	}
	sortFindings(findings, func(a, b Finding) bool {
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		return rank(a.Kind) < rank(b.Kind)
	})
	return append(findings, variantFindings(ev)...)
}

func sortFindings(f []Finding, less func(a, b Finding) bool) {
	sort.SliceStable(f, func(i, j int) bool { return less(f[i], f[j]) })
}

// Green reports whether a verdict kind passes: fixed, or held (a contract
// the new build keeps). Unverified is neither green nor red.
func Green(kind string) bool { return kind == Fixed || kind == Held }

// Headline is a suite's verdict from its fixtures' verdicts, in argument
// order, and the index of the fixture it comes from: the first red
// verdict; else the first unverified; else fixed when an incident is
// among them, held when all are contracts (index -1).
func Headline(verdicts []Verdict, contract []bool) (Verdict, int) {
	for i, p := range verdicts {
		if !Green(p.Kind) && p.Kind != Unverified {
			return p, i
		}
	}
	for i, p := range verdicts {
		if p.Kind == Unverified {
			return p, i
		}
	}
	for i := range verdicts {
		if i < len(contract) && !contract[i] {
			return Verdict{Kind: Fixed}, -1
		}
	}
	return Verdict{Kind: Held}, -1
}

// DeriveSuite re-derives every fixture's verdict from its evidence (its
// variants judged again, JudgeVariants), and the headline from those.
func DeriveSuite(s *SuiteReport) (Verdict, []Verdict) {
	parts := make([]Verdict, len(s.Reports))
	contract := make([]bool, len(s.Reports))
	for i, r := range s.Reports {
		if r == nil {
			continue
		}
		judged, _ := JudgeVariants(r.Evidence)
		parts[i], _ = Derive(judged)
		contract[i] = r.Evidence.Contract
	}
	h, _ := Headline(parts, contract)
	return h, parts
}

// JudgeVariant is the variant rule: v with Kept, OldStep, OldOutcome,
// FailedStep, NewOutcome and Diffs decided from its steps (v.Steps) and
// the diff's evidence (its failure, the recorded failing answer, the
// noise, and for a contract the steps where the old build breaks an
// invariant).
//
// A variant of the incident is kept when the old build fails at the
// varied failing request (the step whose origin is FailsAt) with the
// recorded signature, or the failure's invariant violated there, or, where
// that invariant does not apply, with the recorded failing answer's
// signature (failsByAnswer); a failure elsewhere does not count. A
// regression variant is kept when the old build fails nowhere: no crash,
// no hang, no recurrence of the failure.
//
// The new build fails a kept variant at its first step that shows a
// failure: a crash, a hang, an invariant violated (unless the old build
// broke it too with the same answer), the recorded signature (unless the
// old build gave the very same answer there and it is not the varied
// failing request: an unrelated error both builds give is none of the new
// build's doing); or, before the old build's first failure (the recorded
// way, a crash or a hang) and where the old build did not fail, an output
// different from the old build's, the noise of the step's origin
// excepted, a step whose inputs were seen to differ (InputsDiffer) not
// counted, and a contract's steps where the old build breaks an
// invariant not compared.
func JudgeVariant(ev Evidence, v VariantEvidence) VariantEvidence {
	return newVariantRule(ev).judge(v)
}

// variantRule is what the variant rule reads of a diff's evidence.
type variantRule struct {
	failure kavach.Failure // zero for a contract
	answer  kavach.Outcome // the recording's answer at the failing step
	noise   replay.Noise
	feature map[int]bool // a contract's steps where the old build breaks an invariant
}

func newVariantRule(ev Evidence) variantRule {
	r := variantRule{failure: ev.Failure, noise: noiseOf(ev)}
	if ev.Contract {
		r.feature = map[int]bool{}
	}
	for _, s := range ev.Old.Steps {
		if !ev.Contract && s.Step == ev.Failure.Step {
			r.answer = s.Recorded
		}
		if ev.Contract && len(s.Violated) > 0 {
			r.feature[s.Step] = true
		}
	}
	return r
}

func (r variantRule) judge(v VariantEvidence) VariantEvidence {
	v.Kept, v.OldStep, v.OldOutcome = false, 0, kavach.Outcome{}
	v.FailedStep, v.NewOutcome, v.Diffs = 0, kavach.Outcome{}, nil
	at, limit := r.keeps(&v)
	if !v.Kept {
		if v.OldOutcome.Kind == "" {
			v.OldOutcome = kavach.Outcome{Kind: kavach.OK, Detail: "no step failed the recorded way"}
		}
		return v
	}
	r.fails(&v, at, limit)
	return v
}

// keeps is the old build's half of the variant rule: it sets v.Kept,
// v.OldStep and v.OldOutcome, and returns the index in v.Steps of the
// varied failing request (-1: none, or a regression variant) and of the
// first step whose output is not compared (limit).
func (r variantRule) keeps(v *VariantEvidence) (at, limit int) {
	f := r.failure
	if s, ok := modeRefused(*v); ok {
		// The old build has no such mode: the variant is not what it
		// says, and a new build that has it would answer otherwise.
		v.OldStep, v.OldOutcome = s.Step, s.Old.Outcome
		v.OldOutcome.Detail = "the old build refused the mode request: " + describeOutcome(s.Old.Outcome)
		return -1, 0
	}
	if v.Regression {
		v.Kept = true
		for _, s := range v.Steps {
			if s.Old.Ran && (recurs(f, s.Old.Outcome, s.Old.Violated) || broken(s.Old.Outcome)) {
				v.Kept, v.OldStep, v.OldOutcome = false, s.Step, s.Old.Outcome
				break
			}
		}
		return -1, len(v.Steps)
	}
	at = -1
	for i, s := range v.Steps {
		if !s.Old.Ran || s.Origin != v.FailsAt {
			continue
		}
		at, v.OldStep, v.OldOutcome = i, s.Step, s.Old.Outcome
		switch {
		case recurs(f, s.Old.Outcome, s.Old.Violated):
			v.Kept = true
			if s.Old.Message != "" {
				v.OldOutcome.Detail = s.Old.Message
			}
		case failsByAnswer(f, r.answer, s.Old.Outcome, s.Old.Applied):
			v.Kept = true
			v.OldOutcome.Detail = fmt.Sprintf("the recorded failing answer (%s), where invariant %s does not apply: %s",
				kavach.ErrorSignature(r.answer), f.Oracle.Invariant, describeOutcome(s.Old.Outcome))
		default:
			v.OldOutcome.Detail = "at the varied failing request: " + describeOutcome(s.Old.Outcome)
		}
		break
	}
	// Outputs are compared only before the old build first failed the
	// recorded way: a variant can make it fail earlier than at the varied
	// failing request (the step before it delivered twice pops what the
	// failing one would have), and what follows that failure is the fix's
	// to change.
	limit = max(at, 0)
	for i, s := range v.Steps[:limit] {
		if s.Old.Ran && (recurs(f, s.Old.Outcome, s.Old.Violated) || broken(s.Old.Outcome)) {
			return at, i
		}
	}
	return at, limit
}

// fails is the new build's half of the variant rule, for a kept variant:
// it sets v.FailedStep, v.NewOutcome and v.Diffs (and, for a regression
// variant failed by its output, v.OldOutcome: the old build's answer
// there). at and limit are keeps'.
func (r variantRule) fails(v *VariantEvidence, at, limit int) {
	f := r.failure
	for i, s := range v.Steps {
		if s.New == nil || !s.New.Ran {
			break
		}
		n := s.New
		var o *VariantReply
		if s.Old.Ran {
			o = &s.Old
		}
		// The same answer as the old build's, at a step that is not the
		// old build's failure: whatever it is, the new build did not cause it.
		same := o != nil && i != at && len(s.Diffs) == 0
		signature := recurs(f, n.Outcome, n.Violated) && !same ||
			i == at && failsByAnswer(f, r.answer, n.Outcome, n.Applied)
		// An invariant the old build breaks at the same step with the same
		// answer does not speak for this variant (SET ... NX that did not
		// set, read back by a "GET returns what SET set" rule): the new
		// build broke nothing there.
		var violated []string
		for _, name := range n.Violated {
			if !(same && slices.Contains(o.Violated, name)) {
				violated = append(violated, name)
			}
		}
		if broken(n.Outcome) || signature || len(violated) > 0 {
			v.FailedStep, v.NewOutcome = s.Step, n.Outcome
			if n.Message != "" && !broken(n.Outcome) {
				v.NewOutcome.Detail = n.Message
			}
			return
		}
		// Outputs are compared before the old build's failing step, where
		// the old build did not fail: an answer that was itself a failure
		// (an invariant it broke, the signature) may rightly change.
		if i >= limit || o == nil || broken(o.Outcome) || recurs(f, o.Outcome, o.Violated) || len(o.Violated) > 0 || r.feature[s.Origin] {
			continue
		}
		// Noise of the step's origin does not count, nor where the old
		// build, asked again, answered this variant otherwise.
		var counted []replay.Diff
		for _, d := range s.Diffs {
			if (s.Origin == 0 || !r.noise.Covers(s.Origin, d.Path)) && !slices.Contains(s.OldNoise, d.Path) {
				counted = append(counted, d)
			}
		}
		// Another answer from another state (fingerprinted) is the
		// state's: a silent difference of an earlier step (the bug's
		// write, or the fix's) that the old build's failure shows later.
		if len(counted) > 0 && len(s.InputsDiffer) == 0 {
			v.FailedStep, v.NewOutcome, v.Diffs = s.Step, n.Outcome, counted
			// A variant of the incident keeps the old outcome that kept
			// it (at OldStep); a regression variant, kept by failing
			// nowhere, has the old build's answer here.
			if v.Regression {
				v.OldOutcome = o.Outcome
			}
			return
		}
	}
	v.NewOutcome = kavach.Outcome{Kind: kavach.OK, Detail: fmt.Sprintf("no failure in %d steps", v.Replayed)}
}

// countVariants counts ve.List: the variants of the incident and those of
// them kept (reproducing), the regression variants and those kept
// (handled), and the kept variants of either kind the new build passes.
func countVariants(ve *VariantsEvidence) {
	ve.Generated, ve.Reproducing, ve.Regression, ve.Handled, ve.Passing = 0, 0, 0, 0, 0
	for _, r := range ve.List {
		if r.Regression {
			ve.Regression++
			if r.Kept {
				ve.Handled++
			}
		} else {
			ve.Generated++
			if r.Kept {
				ve.Reproducing++
			}
		}
		if r.Kept && r.FailedStep == 0 && !r.Skipped {
			ve.Passing++
		}
	}
}

// VariantChange is a variant whose judgment from its steps differs from
// the one its report wrote.
type VariantChange struct {
	K       int    `json:"k"`
	Written string `json:"written"` // VariantEvidence.Result as written
	Derived string `json:"derived"` // as its steps give it
}

// JudgeVariants judges again, by the variant rule (JudgeVariant), every
// variant of the evidence that kept its steps, and counts the variants
// again: the evidence with their judgments, and those whose judgment
// differs from the one written. A variant not run (Skipped), or from a
// report written before variants kept their steps (Replayed zero),
// stays as written.
func JudgeVariants(ev Evidence) (Evidence, []VariantChange) {
	rule := newVariantRule(ev)
	ev.Variants.List = slices.Clone(ev.Variants.List)
	var changed []VariantChange
	for i, v := range ev.Variants.List {
		if v.Skipped || v.Replayed == 0 {
			continue
		}
		j := rule.judge(v)
		if a, b := v.Result(), j.Result(); a != b {
			changed = append(changed, VariantChange{K: v.K, Written: a, Derived: b})
		}
		ev.Variants.List[i] = j
	}
	countVariants(&ev.Variants)
	return ev, changed
}

// Result is a variant's judgment in words: "not kept", "skipped", "kept
// at step 5, passed", "kept, failed at step 3".
func (v VariantEvidence) Result() string {
	s := v.result()
	if v.Refused > 0 {
		s += fmt.Sprintf(" (after %d values of the writer the old build refused)", v.Refused)
	}
	return s
}

func (v VariantEvidence) result() string {
	switch {
	case v.Skipped:
		return "skipped"
	case !v.Kept:
		return "not kept"
	}
	s := "kept"
	if v.OldStep > 0 {
		s += fmt.Sprintf(" at step %d", v.OldStep)
	}
	if v.FailedStep > 0 {
		return s + fmt.Sprintf(", failed at step %d", v.FailedStep)
	}
	return s + ", passed"
}

// modeRefused is, for a variant of kind mode, the request turning its
// connection's mode that the old build refused (an inserted step, no
// origin, answered with an error), if it did.
func modeRefused(v VariantEvidence) (VariantStep, bool) {
	if v.Kind != "mode" {
		return VariantStep{}, false
	}
	for _, s := range v.Steps {
		if s.Origin == 0 && s.Old.Ran && s.Old.Outcome.Kind == kavach.Error {
			return s, true
		}
	}
	return VariantStep{}, false
}
