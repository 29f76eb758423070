// Package grade is `kavach diff`: it replays an incident on the old and the
// new build, gathers the evidence of docs/design.md §4, and derives one verdict from
// that evidence alone (Derive), so that `kavach verdict` can recompute it
// from a report.
package grade

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/replay"
)

// SchemaVersion is the version of the report's JSON shape.
const SchemaVersion = 1

// Verdict kinds.
const (
	Fixed              = "fixed"
	Held               = "held" // a contract (a fixture with no failure) that the new build keeps
	Diverged           = "diverged"
	StillFailing       = "still_failing"
	InvariantViolated  = "invariant_violated"
	VariantFailed      = "variant_failed"
	Unverified         = "unverified"
	reasonNotReproduce = "not-reproduced"
	reasonBelowFloor   = "below-floor"
	reasonTooCostly    = "invariants-too-costly"
	reasonContained    = "contained"
)

// Green reports whether a verdict kind passes: fixed, or held (a contract
// the new build keeps). Unverified is neither green nor red.
func Green(kind string) bool { return kind == Fixed || kind == Held }

// Report is what `kavach diff` writes: the verdict, every finding, and
// the evidence both were derived from.
type Report struct {
	SchemaVersion int       `json:"schema_version"`
	Verdict       string    `json:"verdict"` // exactly as printed: "diverged@3"
	Parts         Parts     `json:"verdict_parts"`
	Findings      []Finding `json:"findings"`
	// Explained are the steps after the failure whose difference from
	// the recording the fix explains, each with its reason (Explain):
	// derived from the evidence, as the findings are.
	Explained     []Explained `json:"explained"`
	Fixture       Fixture     `json:"fixture"`
	Builds        Builds      `json:"builds"`
	Evidence      Evidence    `json:"evidence"`
	Seed          uint64      `json:"seed"`
	Options       Settings    `json:"options"`
	KavachVersion string      `json:"kavach_version"`
	DurationsMS   Durations   `json:"durations_ms"`
	// Network is how the builds were kept off the network
	// (replay.Trace.Network): "isolated", or "contained (namespaces
	// refused: REASON)". Empty in a report written before it existed.
	Network string `json:"network,omitempty"`
}

// Parts are the verdict's parts.
type Parts struct {
	Kind      string `json:"kind"`
	Step      int    `json:"step,omitempty"`
	Variant   int    `json:"variant,omitempty"`
	Invariant string `json:"invariant,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// String renders the verdict: "fixed", "diverged@3",
// "invariant_violated(ttl-bound)@7", "variant_failed(4)@9",
// "unverified(not-reproduced: ...)".
func (p Parts) String() string {
	switch p.Kind {
	case Fixed, Held:
		return p.Kind
	case Unverified:
		return fmt.Sprintf("unverified(%s)", p.Reason)
	case InvariantViolated:
		return fmt.Sprintf("%s(%s)@%d", p.Kind, p.Invariant, p.Step)
	case VariantFailed:
		return fmt.Sprintf("%s(%d)@%d", p.Kind, p.Variant, p.Step)
	}
	return fmt.Sprintf("%s@%d", p.Kind, p.Step)
}

// Finding is one thing wrong with the new build, with what an agent needs
// to act on it.
type Finding struct {
	Parts
	Request  string         `json:"request,omitempty"` // the step's request, rendered
	Expected kavach.Outcome `json:"expected"`          // recorded (or old-build) outcome
	Outcome  kavach.Outcome `json:"outcome"`           // the new build's
	Diffs    []replay.Diff  `json:"diffs,omitempty"`
	Detail   string         `json:"detail,omitempty"` // a variant's description, a crash's evidence
	// Rule is, for a step after the failure, the rule that judged it:
	// RuleObserved or RuleInferred (docs/diff.md, "After the failure").
	Rule string `json:"rule,omitempty"`
	// Inputs is, for a step after the failure judged by RuleObserved, the
	// fingerprints of what it read on the old and the new build: equal.
	Inputs []InputField `json:"inputs,omitempty"`
}

// Fixture identifies the fixture graded.
type Fixture struct {
	Path     string          `json:"path"`
	SHA256   string          `json:"sha256"`
	Protocol string          `json:"protocol"`
	Steps    int             `json:"steps"`
	Failure  *kavach.Failure `json:"failure"`
}

// Build identifies one build.
type Build struct {
	Path    string   `json:"path"`
	Args    []string `json:"args,omitempty"`
	SHA256  string   `json:"sha256"`
	Version string   `json:"version,omitempty"`
}

// Builds are the two builds graded.
type Builds struct {
	Old Build `json:"old"`
	New Build `json:"new"`
}

// Settings are the options the diff ran with.
type Settings struct {
	Variants       int    `json:"variants"`
	MinVariants    int    `json:"min_variants"`
	Seed           uint64 `json:"seed"`
	Jobs           int    `json:"jobs"`
	FailFast       bool   `json:"fail_fast"`
	StepTimeoutMS  int64  `json:"step_timeout_ms"`
	StartTimeoutMS int64  `json:"start_timeout_ms,omitempty"`
	Invariants     string `json:"invariants,omitempty"`
	BelowFloor     bool   `json:"below_floor"`
}

// Durations of the diff's parts.
type Durations struct {
	Old      int64 `json:"old_replays"`
	New      int64 `json:"new_replay"`
	Variants int64 `json:"variants"`
	Total    int64 `json:"total"`
}

// Evidence is everything the verdict is derived from.
type Evidence struct {
	Failure kavach.Failure `json:"failure,omitzero"` // zero (left out) for a contract
	// Contract: the fixture has no failure (Failure is zero); every step
	// is held to the recording (docs/contracts.md).
	Contract bool `json:"contract,omitempty"`
	// OldUnmet are, for a contract, the invariants the old build's replay
	// does not meet: expected for a feature's, which the new build must meet.
	OldUnmet []InvariantEvidence `json:"old_unmet,omitempty"`
	// Old is the old build's replays against the recording.
	Old OldEvidence `json:"old"`
	// Noise is what differed between the recording and the old build's
	// replays: excluded from comparisons, listed here.
	Noise []replay.NoiseField `json:"noise"`
	// New is the new build's replay, step by step.
	New        NewEvidence         `json:"new"`
	Variants   VariantsEvidence    `json:"variants"`
	Invariants []InvariantEvidence `json:"invariants"`
	// Floor is the fixture's floor and the options graded with, when the
	// fixture has one: a diff below it is never fixed.
	Floor *FloorEvidence `json:"floor,omitempty"`
	// Inputs says how the steps after the failure were judged: "observed"
	// when each replay fingerprinted the state every one of them read,
	// else why not (the inferred rule judged them).
	Inputs string `json:"inputs,omitempty"`
	// FailureFamily is the failing request's command and the commands of
	// its family, when the integration tells them (kavach.Abilities.Kin): a later
	// request of one of them that both builds refuse, on the same inputs,
	// is a changed refusal.
	FailureFamily []string `json:"failure_family,omitempty"`
	// Omitted is how many steps of a long recording, before its variants'
	// window (and before the failing step), are not listed in Old.Steps
	// and New.Steps: each ran on both builds with the recorded outcome and
	// exactly the recorded output, and so says nothing (docs/diff.md,
	// "Long recordings").
	Omitted int `json:"omitted_steps,omitempty"`
}

// FloorEvidence is the fixture's floor beside the options a diff asked for.
type FloorEvidence struct {
	Floor       fixtures.Floor `json:"floor"`
	Variants    int            `json:"variants"`
	MinVariants int            `json:"min_variants"`
	Seed        uint64         `json:"seed"`
}

// Below says how the options fall below the floor ("min_variants 1 < 10;
// variants 8 < 64"), or "".
func (f *FloorEvidence) Below() string {
	if f == nil {
		return ""
	}
	return strings.Join(f.Floor.Below(f.Variants, f.MinVariants, f.Seed), "; ")
}

// OldEvidence is what the old build's replays showed.
type OldEvidence struct {
	Runs    int            `json:"runs"`
	Clock   string         `json:"clock"`
	Stopped string         `json:"stopped,omitempty"`
	Steps   []StepEvidence `json:"steps"` // every step of the first run
}

// NewEvidence is what the new build's replay showed.
type NewEvidence struct {
	Clock   string         `json:"clock"`
	Stopped string         `json:"stopped,omitempty"`
	Exit    *kavach.Exit   `json:"exit,omitempty"`
	Steps   []StepEvidence `json:"steps"`
}

// StepEvidence is one replayed step against the recording.
type StepEvidence struct {
	Step    int    `json:"step"`
	Request string `json:"request"`
	// Conn and AtUS place the step in the recording, for the HTML
	// report's timeline: the connection it was sent on and its request's
	// time since the recording started, in microseconds (the virtual time
	// every replay gives it, a clock variant's shift aside). Set on the
	// new build's steps only; a report written before they existed has
	// neither, and its timeline spaces the steps evenly.
	Conn     uint64         `json:"conn,omitempty"`
	AtUS     int64          `json:"at_us,omitempty"`
	Ran      bool           `json:"ran"`
	Recorded kavach.Outcome `json:"recorded"`
	Outcome  kavach.Outcome `json:"outcome"`
	// Diffs are every difference from the recording's output, noise
	// fields included (Derive leaves those out).
	Diffs []replay.Diff `json:"diffs,omitempty"`
	// Violated are the invariants that did not hold at this step.
	Violated []string `json:"violated,omitempty"`
	// NotEvaluable are the invariants that could not be evaluated here.
	NotEvaluable []string `json:"not_evaluable,omitempty"`
	// Output is the build's normalized replies (the new build's, for
	// every step: the failing step and the later ones included).
	Output []any `json:"output,omitempty"`
	// RecordedOutput is the recording's normalized replies, on the new
	// build's steps that differ from it (Diffs not empty) and where the
	// recording had replies: what the HTML report shows beside Output.
	RecordedOutput []any `json:"recorded_output,omitempty"`
	// Keys are the keys (or resources) the step touches, from the failing
	// step on; KeysUnknown when the integration cannot tell (the step may
	// depend on anything).
	Keys        []string `json:"keys,omitempty"`
	KeysUnknown bool     `json:"keys_unknown,omitempty"`
	// Writes are the keys among Keys the step may write, when the
	// integration tells writes from reads (WritesKnown); without
	// WritesKnown (an integration that cannot tell, a report from before)
	// the step may write every key it touches.
	Writes      []string `json:"writes,omitempty"`
	WritesKnown bool     `json:"writes_known,omitempty"`
	// Command is the request's command, from the failing step on, when
	// the integration tells it (kavach.Abilities.Kin).
	Command string `json:"command,omitempty"`
	// Inputs is, after the failing step, the fingerprint of the state the
	// step was about to read on this build (replay.StepResult.Inputs).
	// On the new build's steps, InputsNoise are its fields that differ
	// between the old build's own replays (never compared), and
	// InputsError says why a replay took no fingerprint.
	Inputs      map[string]string `json:"inputs,omitempty"`
	InputsNoise []string          `json:"inputs_noise,omitempty"`
	InputsError string            `json:"inputs_error,omitempty"`
	// Contained says why the step was not compared: Kavach withheld its
	// request from a build sharing the machine's network and answered it
	// itself, or its reply was known to differ (replay.StepResult.Contained).
	// A contained step is neither a divergence nor a failure; a contained
	// failing step leaves the verdict unverified(contained: ...).
	Contained string `json:"contained,omitempty"`
}

// VariantsEvidence is the variants generated and what each did.
type VariantsEvidence struct {
	Generated   int    `json:"generated"`   // variants of the incident
	Reproducing int    `json:"reproducing"` // of those, failing on the old build with the recorded signature
	Regression  int    `json:"regression"`  // regression variants
	Handled     int    `json:"handled"`     // of those, handled by the old build without failing
	Passing     int    `json:"passing"`     // kept variants of either kind that the new build passes
	Min         int    `json:"min"`
	Note        string `json:"note,omitempty"`
	// Window is, for a long recording, the steps its variants were made
	// from and replayed ("steps 1000 to 3000"): a window around the
	// failing step, replayed from a fresh build without the steps before
	// it. Empty: the whole recording.
	Window string `json:"window,omitempty"`
	// Slice is, for a long recording, the dependency slice its variants
	// were made from and replayed instead of a window (nil: they used the
	// window or the whole recording); SliceFallback why a long
	// recording's variants use the window.
	Slice         *SliceEvidence `json:"slice,omitempty"`
	SliceFallback string         `json:"slice_fallback,omitempty"`
	// Excluded are the variant kinds the fixture excludes (kavach mark --exclude).
	Excluded []string `json:"excluded_kinds,omitempty"`
	// LeftWhole is what the integration left whole in the failing
	// request, and why (a script it cannot read: its call sites were not
	// varied).
	LeftWhole []string `json:"left_whole,omitempty"`
	// SkippedSiblings are the commands of the failing request's family
	// the old build does not have: no sibling variant was made of them.
	SkippedSiblings []string `json:"skipped_siblings,omitempty"`
	// ByKind is List grouped by kind (CountKinds).
	ByKind []KindCount       `json:"by_kind,omitempty"`
	List   []VariantEvidence `json:"list"`
}

// VariantEvidence is one variant and its outcomes.
type VariantEvidence struct {
	K    int    `json:"k"`
	Kind string `json:"kind,omitempty"` // kavach.VariantKinds
	// Place is where the mutation is: the failing request, an earlier
	// request writing a key it names, another earlier request, or a
	// regression variant (variants.PlaceFailing, ...).
	Place       string `json:"place,omitempty"`
	Description string `json:"description"`
	Regression  bool   `json:"regression,omitempty"`
	// Kept: a variant of the incident that fails on the old build with the
	// recorded signature at the varied failing request (OldStep), or a regression variant the old
	// build handled without failing. Only kept variants count.
	Kept       bool           `json:"kept"`
	OldStep    int            `json:"old_step,omitempty"`
	OldOutcome kavach.Outcome `json:"old_outcome"`
	FailedStep int            `json:"failed_step,omitempty"` // where the new build failed it, 0 if it passed
	Skipped    bool           `json:"skipped,omitempty"`     // not run on the new build: --fail-fast
	NewOutcome kavach.Outcome `json:"new_outcome"`
	Diffs      []replay.Diff  `json:"diffs,omitempty"`
	// StartError: a build did not start for this variant, twice; the diff
	// then fails (exit 2) instead of giving a verdict.
	StartError string `json:"-"`
}

// InvariantEvidence is one invariant's result on the new build's replay.
type InvariantEvidence struct {
	Name      string `json:"name"`
	Held      bool   `json:"held"`
	FirstStep int    `json:"first_violation,omitempty"`
	Message   string `json:"message,omitempty"`
	// NotEvaluable are the steps where it could not be evaluated (no
	// violation there); NotEvaluableMessage says why at the first.
	NotEvaluable        []int  `json:"not_evaluable,omitempty"`
	NotEvaluableMessage string `json:"not_evaluable_message,omitempty"`
	// TooCostly: the invariants' budget for the replay ran out, this one
	// having spent the most; the message says where.
	TooCostly string `json:"too_costly,omitempty"`
	// Except are the variant kinds it does not speak for.
	Except []string `json:"except,omitempty"`
}

// Derive computes the findings and the headline verdict from evidence
// alone (docs/design.md §3): the old build must reproduce the failure, else
// unverified(not-reproduced: ...); findings on the fixture's own replay,
// the earliest by step (at one step: diverged, then still_failing, then
// invariant_violated); else the failing variant with the lowest K; else
// unverified when fewer than the minimum variants reproduce; else
// unverified(below-floor: ...) when graded below the fixture's floor;
// else fixed.
func Derive(ev Evidence) (Parts, []Finding) {
	if ev.Contract {
		return deriveContract(ev)
	}
	if reason := containedFailure(ev); reason != "" {
		return Parts{Kind: Unverified, Reason: reasonContained + ": " + reason}, nil
	}
	if reason := notReproduced(ev); reason != "" {
		return Parts{Kind: Unverified, Reason: reasonNotReproduce + ": " + reason}, nil
	}
	noise := noiseOf(ev)
	F := ev.Failure.Step
	var findings []Finding
	for _, s := range ev.New.Steps {
		if !s.Ran || s.Contained != "" {
			continue
		}
		if s.Step < F {
			counted, _ := noise.Split(s.Diffs)
			if len(counted) > 0 {
				findings = append(findings, Finding{Parts: Parts{Kind: Diverged, Step: s.Step}, Request: s.Request,
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
			findings = append(findings, Finding{Parts: Parts{Kind: StillFailing, Step: s.Step}, Request: s.Request,
				Expected: s.Recorded, Outcome: s.Outcome, Detail: s.Outcome.Detail})
		}
	}
	after, _ := afterFailure(ev, noise)
	findings = append(findings, after...)
	for _, inv := range ev.Invariants {
		if !inv.Held {
			findings = append(findings, Finding{Parts: Parts{Kind: InvariantViolated, Step: inv.FirstStep, Invariant: inv.Name}, Detail: inv.Message,
				Outcome: outcomeAt(ev.New.Steps, inv.FirstStep)})
		}
	}
	order := map[string]int{Diverged: 0, StillFailing: 1, InvariantViolated: 2}
	sortFindings(findings, func(a, b Finding) bool {
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		return order[a.Kind] < order[b.Kind]
	})
	findings = append(findings, variantFindings(ev)...)
	if len(findings) > 0 {
		return findings[0].Parts, findings
	}
	for _, inv := range ev.Invariants {
		if inv.TooCostly != "" {
			// Not checked past where the budget ran out: nothing says
			// they hold there.
			return Parts{Kind: Unverified, Reason: reasonTooCostly + ": " + inv.TooCostly}, findings
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
			return Parts{Kind: Unverified, Reason: "not-evaluable: " + msg}, findings
		}
	}
	if v := ev.Variants; v.Reproducing < v.Min {
		return Parts{Kind: Unverified, Reason: fmt.Sprintf("variants: %d of %d reproduce, need %d", v.Reproducing, v.Generated, v.Min)}, findings
	}
	// Graded more weakly than the fixture allows (--below-floor): the
	// checks passed, but not the ones the incident asks for.
	if below := ev.Floor.Below(); below != "" {
		return Parts{Kind: Unverified, Reason: reasonBelowFloor + ": " + below}, findings
	}
	return Parts{Kind: Fixed}, findings
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
		case s.Contained != "":
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

func sortFindings(f []Finding, less func(a, b Finding) bool) {
	sort.SliceStable(f, func(i, j int) bool { return less(f[i], f[j]) })
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

// variantFindings are the kept variants the new build failed, by K: they
// follow the findings on the fixture's own replay, for incidents and
// contracts alike.
func variantFindings(ev Evidence) []Finding {
	var out []Finding
	for _, v := range ev.Variants.List {
		if v.Kept && v.FailedStep > 0 {
			out = append(out, Finding{Parts: Parts{Kind: VariantFailed, Variant: v.K, Step: v.FailedStep},
				Detail: v.Description, Expected: v.OldOutcome, Outcome: v.NewOutcome, Diffs: v.Diffs})
		}
	}
	sortFindings(out, func(a, b Finding) bool { return a.Variant < b.Variant })
	return out
}

// Spent says how the variants run spent the budget by place: how many
// went to the failing request, the earlier requests writing a key it
// names, the other earlier requests, and regression variants, in that
// order, leaving out none: "failing request 40, writers of its keys 8,
// ...". How they went by kind is ByKind (the checked lines' "by kind").
func (ve VariantsEvidence) Spent() string {
	places := []struct{ place, name string }{{"failing", "failing request"}, {"writer", "writers of its keys"},
		{"other", "other earlier requests"}, {"regression", "regression"}}
	count := func(match func(VariantEvidence) bool) int {
		n := 0
		for _, v := range ve.List {
			if match(v) {
				n++
			}
		}
		return n
	}
	var where []string
	for _, p := range places {
		if n := count(func(v VariantEvidence) bool { return v.Place == p.place }); n > 0 {
			where = append(where, fmt.Sprintf("%s %d", p.name, n))
		}
	}
	return strings.Join(where, ", ")
}
