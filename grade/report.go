// Package grade is `kavach diff`: it replays an incident on the old and the
// new build, gathers the evidence of docs/design.md §4, and derives one verdict from
// that evidence alone (Derive), so that `kavach verdict` can recompute it
// from a report. Every rule that decides a verdict is in rules.go.
package grade

import (
	"fmt"
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
	reasonMissingState = "missing-state"
	reasonOrderUnknown = "order-unknown"
)

// Report is what `kavach diff` writes: the verdict, every finding, and
// the evidence both were derived from.
type Report struct {
	SchemaVersion int       `json:"schema_version"`
	Verdict       string    `json:"verdict"` // exactly as printed: "diverged@3"
	Parts         Verdict   `json:"verdict_parts"`
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

// Verdict is a verdict in its parts: its kind, and the step, variant,
// invariant or reason it names (String renders it).
type Verdict struct {
	Kind      string `json:"kind"`
	Step      int    `json:"step,omitempty"`
	Variant   int    `json:"variant,omitempty"`
	Invariant string `json:"invariant,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// String renders the verdict: "fixed", "diverged@3",
// "invariant_violated(ttl-bound)@7", "variant_failed(4)@9",
// "unverified(not-reproduced: ...)".
func (p Verdict) String() string {
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
	Verdict
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
	// NoCheckpoints: every variant replayed every step (--checkpoints=false).
	NoCheckpoints bool `json:"no_checkpoints,omitempty"`
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
	// its family, when the integration tells them (kavach.Abilities.Kin),
	// and of its group, when the old build documents one
	// (kavach.Abilities.Group): a later request of one of them that both
	// builds refuse, on the same inputs, is a changed refusal.
	FailureFamily []string `json:"failure_family,omitempty"`
	// FailureGroup is the group the old build's documentation puts the
	// failing command in ("" when it gives none).
	FailureGroup string `json:"failure_group,omitempty"`
	// StateLacking: the fixture was recorded in front of a running
	// service and holds none of its state (recorded before fixtures held
	// it, or with --state none), so a difference every replay of the old
	// build agrees on is the state it lacks, not noise (docs/replay.md,
	// "State").
	StateLacking bool `json:"state_lacking,omitempty"`
	// OrderUnknown are the steps whose answer may depend on the order of
	// a write of another client and a proxied request, which the
	// recording could not know (fixtures.State.OrderUnknown): a
	// difference there is that, never noise, never a regression.
	OrderUnknown []int `json:"order_unknown,omitempty"`
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
	Runs int `json:"runs"`
	// Confirming is how many of Runs were asked for after the new build
	// differed from the recording where the first replays showed no
	// noise (Options.Confirm); 0 when none were.
	Confirming int            `json:"confirming,omitempty"`
	Clock      string         `json:"clock"`
	Stopped    string         `json:"stopped,omitempty"`
	Steps      []StepEvidence `json:"steps"` // every step of the first run
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
	// Foreign: the step is a write of another client that did not come
	// through the recording's proxy (replay.StepResult.Foreign): applied
	// where the service ran it, not compared.
	Foreign bool `json:"foreign,omitempty"`
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
	// ByKind is List grouped by kind (CountKinds), with how many of each
	// kind could be made (WithApplicable): a kind applicable and not
	// generated has a row with Generated 0.
	ByKind []KindCount       `json:"by_kind,omitempty"`
	List   []VariantEvidence `json:"list"`
	// Checkpoints are the states the variants started from instead of
	// replaying the steps before the one they change (docs/variants.md,
	// "Checkpoints"), or why one was not used.
	Checkpoints []CheckpointEvidence `json:"checkpoints,omitempty"`
}

// CheckpointEvidence is one build's checkpoint before one step.
type CheckpointEvidence struct {
	Step     int    `json:"step"`     // the fixture's step it is before
	Build    string `json:"build"`    // "old" or "new"
	Variants int    `json:"variants"` // how many variants started from it
	// Unused says why no variant started from it: it could not be
	// saved, or a build started from it answered otherwise than one
	// that replayed the steps before it.
	Unused string `json:"unused,omitempty"`
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
	// Refused is, for a variant of a writer's value, how many values of
	// the writer's part the old build refused before the one run
	// (Description's): a refused write stores nothing, so the next value
	// of the part is tried (docs/variants.md, "A value the writer
	// refuses"). When every value tried was refused, the last is the one
	// run.
	Refused int `json:"refused,omitempty"`
	// Remembered: the old build's replay of this variant was not run
	// for this diff but taken from an earlier diff's, of the same inputs
	// on the same build file, in this process (Options.Memo).
	Remembered bool `json:"remembered,omitempty"`
	// Confirming is how many more times the old build replayed the
	// variant because the new build answered it otherwise (its steps'
	// OldNoise); 0 when none.
	Confirming int `json:"confirming,omitempty"`
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
	// FailsAt is, for a variant of the incident, the fixture's step whose
	// variant is its varied failing request: the failing step, or the
	// step a transplant put the failing request's trigger into.
	FailsAt int `json:"fails_at,omitempty"`
	// Replayed is how many steps the variant's replays had; zero for a
	// variant not run (Skipped) and in a report written before variants
	// kept their steps, whose variants cannot be judged again.
	Replayed int `json:"replayed,omitempty"`
	// Steps are the variant's replays, step by step, on the old build and,
	// if it kept the variant, on the new: what the variant rule
	// (JudgeVariant) decides Kept, OldStep, FailedStep and their outcomes
	// from. A step both builds ran and answered ok, alike, with no
	// invariant broken, is left out (the rule finds nothing in it), except
	// at the varied failing request.
	Steps []VariantStep `json:"steps,omitempty"`
	// StartError: a build did not start for this variant, twice; the diff
	// then fails (exit 2) instead of giving a verdict.
	StartError string `json:"-"`
}

// VariantStep is one step of a variant on both builds.
type VariantStep struct {
	// Step names the step as the variant's findings do: the variant's
	// own step, or, for a variant of a long recording's window or slice,
	// the fixture's step it came from.
	Step int `json:"step"`
	// Origin is the fixture's step this one came from (0: a step the
	// variant added): its noise is the fixture step's, and a contract's
	// step where the old build breaks an invariant is not compared.
	Origin int          `json:"origin,omitempty"`
	Old    VariantReply `json:"old"`
	// New is nil when the new build did not replay the variant (the old
	// build did not keep it).
	New *VariantReply `json:"new,omitempty"`
	// Diffs are every difference of the new build's answer from the old
	// build's, noise included, when both ran the step.
	Diffs []replay.Diff `json:"diffs,omitempty"`
	// InputsDiffer are the values of the state the step was about to
	// read that differed between the builds, as a second replay of each
	// fingerprinted them (made only for a kept variant whose output
	// differed before the old build failed): the difference is then the
	// state's, explained (docs/variants.md, "What the variant read").
	InputsDiffer []InputField `json:"inputs_differ,omitempty"`
	// OldNoise are the paths where the old build, asked again (replayed
	// once more for each of Options.Confirm, made only for a kept variant
	// whose output differed), answered otherwise than its first replay
	// of the variant: the old build's noise, not counted.
	OldNoise []string `json:"old_noise,omitempty"`
}

// VariantReply is one build's answer at a step of a variant.
type VariantReply struct {
	Ran     bool           `json:"ran"`
	Outcome kavach.Outcome `json:"outcome"`
	// Violated are the invariants that did not hold at the step, and
	// Message what the first says.
	Violated []string `json:"violated,omitempty"`
	Message  string   `json:"message,omitempty"`
	// Applied are, at the varied failing request, the invariants that
	// applied there (a failure by the answer itself needs its invariant
	// not to, failsByAnswer).
	Applied []string `json:"applied,omitempty"`
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

// OldUnmetNote is what a contract's report says of an invariant the old
// build does not meet.
func OldUnmetNote(name string) string {
	return fmt.Sprintf("the old build does not meet %s: expected for a feature", name)
}

// uncompared reports whether the step is not compared with the
// recording: Kavach answered it (Contained), or it is a write of another
// client (Foreign).
func (s StepEvidence) uncompared() bool { return s.Contained != "" || s.Foreign }
