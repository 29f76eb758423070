package htmlreport

import (
	"fmt"
	"strings"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/replay"
)

// section is one fixture's report on a page.
type section struct {
	ID           string // prefix of the section's ids: "s0-"
	Fixture      string
	InSuite      bool
	Headline     bool // in a suite: the fixture the suite's verdict comes from
	Verdict      string
	VerdictClass string
	Meaning      string
	Timeline     *timeline
	Finding      *findingView
	Failing      *findingView // the failing step, when the finding is not there
	Steps        stepsView
	More         []string // the other findings, one line each
	Variants     variantsView
	Invariants   []invariantRow
	OldUnmet     []invariantRow
	Facts        []factGroup
}

// buildSection turns one report into its section.
func buildSection(rep *grade.Report, prefix string, inSuite bool) *section {
	s := &section{ID: prefix, Fixture: rep.Fixture.Path, InSuite: inSuite, Verdict: rep.Verdict,
		VerdictClass: verdictClass(rep.Parts.Kind), Meaning: meaning(rep)}
	s.Timeline = buildTimeline(rep, prefix)
	if len(rep.Findings) > 0 {
		s.Finding = buildFinding(rep, rep.Findings[0])
		for _, f := range rep.Findings[1:] {
			line := f.Verdict.String()
			switch {
			case f.Kind == grade.VariantFailed:
				line += ": " + f.Detail
			case f.Request != "":
				line += ": " + f.Request
			case f.Detail != "":
				line += ": " + f.Detail
			}
			s.More = append(s.More, cut(line, 300))
		}
	}
	s.Failing = failingStep(rep)
	s.Steps = buildSteps(rep, prefix)
	s.Variants = buildVariants(rep, prefix)
	for _, inv := range rep.Evidence.Invariants {
		s.Invariants = append(s.Invariants, invariantRowOf(inv))
	}
	for _, inv := range rep.Evidence.OldUnmet {
		s.OldUnmet = append(s.OldUnmet, invariantRow{Name: inv.Name, First: stepOr(inv.FirstStep), Message: inv.Message})
	}
	s.Facts = facts(rep)
	return s
}

// verdictClass colours a verdict: green for fixed and held, amber for
// unverified, red for the rest.
func verdictClass(kind string) string {
	switch {
	case grade.Green(kind):
		return "green"
	case kind == grade.Unverified:
		return "amber"
	}
	return "red"
}

// meaning says in one sentence what a report's verdict means, from its
// parts and evidence (docs/design.md §3).
func meaning(rep *grade.Report) string {
	p, ev := rep.Parts, rep.Evidence
	F := ev.Failure.Step
	switch p.Kind {
	case grade.Fixed:
		return fmt.Sprintf("Every check passed: the new build answers as recorded up to the failure at step %d, the failure is gone, every declared invariant holds, and the %d variants that still break the old build the recorded way pass on it.",
			F, ev.Variants.Reproducing)
	case grade.Held:
		return "The new build keeps the contract: every step answered as recorded, every declared invariant held, and the regression variants answered as the old build answered them."
	case grade.Diverged:
		switch {
		case ev.Contract:
			return fmt.Sprintf("Step %d gave other output on the new build than in the recording, which a contract holds every step to.", p.Step)
		case p.Step > F:
			return fmt.Sprintf("Step %d, after the failure at step %d, gave other output on the new build than in the recording, and the fix does not explain it (it touches no state a changed step touched).", p.Step, F)
		}
		return fmt.Sprintf("Step %d, before the failure at step %d, gave other output on the new build than in the recording: a fix must leave earlier behaviour as it was.", p.Step, F)
	case grade.StillFailing:
		if p.Step == F {
			return fmt.Sprintf("The new build still fails at step %d the way the old one did (%s).", p.Step, ev.Failure.Signature)
		}
		return fmt.Sprintf("The new build gets past step %d but fails the recorded way (%s) at step %d: the failure moved.", F, ev.Failure.Signature, p.Step)
	case grade.InvariantViolated:
		return fmt.Sprintf("The declared invariant %s does not hold at step %d on the new build.", p.Invariant, p.Step)
	case grade.VariantFailed:
		for _, v := range ev.Variants.List {
			if v.K == p.Variant && v.Regression {
				return fmt.Sprintf("Regression variant %d, a mutated earlier input that the old build handled, fails on the new build at step %d: the fix changed behaviour it should keep.", p.Variant, p.Step)
			}
		}
		return fmt.Sprintf("The new build passes the recorded incident, but variant %d, which still breaks the old build the recorded way, fails on it at step %d: the fix handles the one input, not the cause.", p.Variant, p.Step)
	case grade.Unverified:
		return fmt.Sprintf("Kavach cannot judge this fix with the evidence it has (%s); this is not a judgement of the fix.", p.Reason)
	}
	return "The report's verdict names no known kind."
}

// suiteMeaning says what a suite's headline is and where it comes from.
func suiteMeaning(s *grade.SuiteReport) string {
	n := len(s.Reports)
	if s.Headline < 0 || s.Headline >= n || s.Reports[s.Headline] == nil {
		return fmt.Sprintf("Every one of the %d fixtures is green: each incident fixed, each contract held.", n)
	}
	return fmt.Sprintf("The suite's verdict is that of %s, the first of its %d fixtures (in the order given) with a red verdict, or else an unverified one; each fixture's section follows.",
		s.Reports[s.Headline].Fixture.Path, n)
}

// findingView is the headline finding: the step's request and the
// answers side by side.
type findingView struct {
	Title   string
	Request string
	Detail  string
	Columns []answerColumn
	Diffs   []diffRow
	// HasRecorded: the differences are against the recording (a finding
	// on the fixture's own replay), not only between the builds.
	HasRecorded bool
	Note        string
}

type answerColumn struct {
	Name    string
	Outcome string
	Class   string // the outcome's mark class
	Note    string
	Lines   []answerLine
}

type diffRow struct {
	Path, Recorded, Old, New string
	Class                    string // "diff" or "noise"
	Reason                   string
}

// buildFinding shows a finding: for one on the fixture's own replay, the
// recorded, old and new answers at its step; for a variant, the old and
// new outcomes of the variant and where their outputs differ.
func buildFinding(rep *grade.Report, f grade.Finding) *findingView {
	if f.Kind == grade.VariantFailed {
		return variantFinding(rep, f)
	}
	ev := rep.Evidence
	fv := &findingView{Title: f.Verdict.String(), Request: f.Request, Detail: f.Detail}
	st, old, hasOld := findingSteps(ev, f.Step)
	if fv.Request == "" {
		fv.Request = st.Request
	}
	fv.HasRecorded = true
	counted, _ := noiseOf(ev.Noise).Split(st.Diffs)
	m := marker{noise: map[string]string{}}
	for _, d := range counted {
		if d.Path != "outcome" {
			m.diffs = append(m.diffs, d.Path)
		}
	}
	var fields []replay.NoiseField
	for _, nf := range ev.Noise {
		if nf.Step == f.Step {
			m.noise[nf.Path] = noiseReason(nf)
			fields = append(fields, nf)
		}
	}
	recorded, recNote := recordedAnswer(st)
	before := ev.Contract || f.Step < ev.Failure.Step
	fv.Columns = []answerColumn{
		{Name: "recording", Outcome: st.Recorded.String(), Class: outcomeClass(st.Recorded, true), Note: firstNonEmpty(recNote, st.Recorded.Detail),
			Lines: answerLines(recorded, m)},
		oldColumn(old, hasOld, before, recorded, m.noise),
		{Name: "new build", Outcome: outcomeOr(st.Outcome, st.Ran), Class: outcomeClass(st.Outcome, st.Ran), Note: st.Outcome.Detail,
			Lines: answerLines(st.Output, m)},
	}
	if f.Kind == grade.InvariantViolated {
		fv.Title = fmt.Sprintf("invariant %s does not hold at step %d", f.Invariant, f.Step)
		fv.Detail = f.Detail
	}
	if f.Kind == grade.StillFailing {
		fv.Detail = fmt.Sprintf("recorded failure: %s; new build: %s", ev.Failure.Signature, f.Outcome)
		if e := ev.New.Exit; e != nil && len(e.Notable) > 0 {
			fv.Detail += "\n" + strings.Join(e.Notable, "\n")
		}
	}
	fv.Diffs = findingDiffs(st, counted, fields, before)
	return fv
}

// variantFinding shows a failed variant: the old and new builds'
// outcomes of the variant and where their outputs differ.
func variantFinding(rep *grade.Report, f grade.Finding) *findingView {
	fv := &findingView{Title: fmt.Sprintf("variant %d fails on the new build at step %d", f.Variant, f.Step), Detail: f.Detail}
	oldName := "old build (the variant)"
	for _, v := range rep.Evidence.Variants.List {
		if v.K == f.Variant && v.Kept && v.OldStep > 0 && !v.Regression {
			oldName = fmt.Sprintf("old build (the variant), step %d", v.OldStep)
		}
	}
	fv.Columns = []answerColumn{
		{Name: oldName, Outcome: f.Expected.String(), Class: outcomeClass(f.Expected, true), Note: f.Expected.Detail},
		{Name: "new build (the variant)", Outcome: f.Outcome.String(), Class: outcomeClass(f.Outcome, true), Note: f.Outcome.Detail},
	}
	for _, d := range f.Diffs {
		if d.Path == "outcome" {
			continue
		}
		fv.Diffs = append(fv.Diffs, diffRow{Path: d.Path, Old: d.Want, New: d.Got, Class: "diff"})
	}
	fv.Note = "A variant's answers are compared with the old build's replay of the same variant, not with the recording."
	return fv
}

// findingSteps is a step's evidence on the new build's replay and, when
// the old build's replay has it, on the old build's.
func findingSteps(ev grade.Evidence, step int) (st, old grade.StepEvidence, hasOld bool) {
	for _, s := range ev.New.Steps {
		if s.Step == step {
			st = s
		}
	}
	for _, s := range ev.Old.Steps {
		if s.Step == step {
			old, hasOld = s, true
		}
	}
	return st, old, hasOld
}

// recordedAnswer is the recording's answer at a step as the report keeps
// it, and a note when it does not keep it.
func recordedAnswer(st grade.StepEvidence) (recorded []any, note string) {
	recorded = st.RecordedOutput
	switch {
	case recorded == nil && len(st.Diffs) == 0:
		recorded = st.Output // no difference at all: the new build's answer is the recording's
	case recorded == nil && (st.Recorded.Kind == kavach.Crash || st.Recorded.Kind == kavach.Hang):
		note = "No answer was recorded."
	case recorded == nil:
		note = "The recording's answer is not kept in this report; the differences below give its values."
	}
	return recorded, note
}

// oldColumn is the old build's answer at a finding's step. Before the
// failure it answered as recorded (noise aside), so the recording's
// answer stands for it; at and after the failure the report keeps no
// answer of the old build.
func oldColumn(old grade.StepEvidence, hasOld, before bool, recorded []any, noise map[string]string) answerColumn {
	col := answerColumn{Name: "old build", Outcome: "not run", Class: "notrun"}
	if !hasOld || !old.Ran {
		return col
	}
	col.Outcome, col.Class, col.Note = old.Outcome.String(), outcomeClass(old.Outcome, true), old.Outcome.Detail
	if before && old.Outcome.Kind == old.Recorded.Kind {
		col.Lines = answerLines(recorded, marker{noise: noise})
		if col.Note == "" {
			col.Note = "Answered as recorded (that is how noise is found), except the greyed fields."
		}
	} else if col.Note == "" {
		col.Note = "At and after the failure the old build's answer is not compared, so the report does not keep it."
	}
	return col
}

// findingDiffs is the rows of a finding's differences: the counted ones,
// then the step's noise fields with their recorded and replayed values.
func findingDiffs(st grade.StepEvidence, counted []replay.Diff, fields []replay.NoiseField, before bool) []diffRow {
	var out []diffRow
	for _, d := range counted {
		if d.Path == "outcome" {
			continue
		}
		out = append(out, diffRow{Path: d.Path, Recorded: d.Want, Old: oldValue(before, d.Want), New: d.Got, Class: "diff"})
	}
	for _, nf := range fields {
		r := diffRow{Path: nf.Path, Class: "noise", Reason: noiseReason(nf), New: "(left out)"}
		if len(nf.Values) > 0 {
			r.Recorded = nf.Values[0]
			r.Old = strings.Join(nf.Values[1:], ", ")
		}
		for _, d := range st.Diffs {
			if within(d.Path, nf.Path) {
				r.New = d.Got
			}
		}
		out = append(out, r)
	}
	return out
}

func oldValue(before bool, recorded string) string {
	if before {
		return recorded + " (as recorded)"
	}
	return "(not kept)"
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// variantsView is the variants table, filterable by outcome.
type variantsView struct {
	Summary string
	Note    string
	Rows    []variantRow
	Counts  map[string]int // rows per filter class
	Filters []filter
}

type filter struct {
	ID, Value, Label string
	N                int
}

type variantRow struct {
	K           int
	Kind        string
	Description string
	Old, New    string
	Kept        string
	Failed      string
	Class       string // failed, passed, notkept, skipped: what the filter shows
}

func buildVariants(rep *grade.Report, prefix string) variantsView {
	v := rep.Evidence.Variants
	vv := variantsView{Note: v.Note, Counts: map[string]int{}}
	vv.Summary = fmt.Sprintf("%d variants of the incident generated, %d reproduce the failure on the old build (%d needed); %d regression variants, %d handled by the old build; %d kept variants pass on the new build.",
		v.Generated, v.Reproducing, v.Min, v.Regression, v.Handled, v.Passing)
	if rep.Evidence.Contract {
		vv.Summary = fmt.Sprintf("%d regression variants, %d handled by the old build (%d needed); %d pass on the new build.", v.Regression, v.Handled, v.Min, v.Passing)
	}
	if len(v.Excluded) > 0 {
		vv.Summary += " Kinds the fixture excludes: " + strings.Join(v.Excluded, ", ") + "."
	}
	for _, x := range v.List {
		r := variantRow{K: x.K, Kind: x.Kind, Description: x.Description, Old: x.OldOutcome.String(), New: x.NewOutcome.String(), Kept: "no", Failed: "no"}
		if x.OldOutcome.Kind == "" {
			r.Old = "-"
		}
		if x.NewOutcome.Kind == "" {
			r.New = "-"
		}
		if x.OldStep > 0 {
			r.Old += fmt.Sprintf(" @%d", x.OldStep)
		}
		switch {
		case !x.Kept:
			r.Class, r.New = "notkept", "(not run)"
			if x.Regression {
				r.Failed = "(the old build failed it)"
			} else {
				r.Failed = "(the old build did not fail it)"
			}
		case x.Skipped:
			r.Kept, r.Class, r.New, r.Failed = "yes", "skipped", "(not run: --fail-fast)", "(not run)"
		case x.FailedStep > 0:
			r.Kept, r.Class, r.Failed = "yes", "failed", fmt.Sprintf("yes @%d", x.FailedStep)
		default:
			r.Kept, r.Class = "yes", "passed"
		}
		if x.Kind == "" {
			r.Kind = "?"
		}
		vv.Counts[r.Class]++
		vv.Rows = append(vv.Rows, r)
	}
	for _, f := range []struct{ value, label string }{{"all", "all"}, {"failed", "failed on the new build"}, {"passed", "passed"}, {"notkept", "not kept"}, {"skipped", "not run"}} {
		n := vv.Counts[f.value]
		if f.value == "all" {
			n = len(vv.Rows)
		} else if n == 0 {
			continue
		}
		vv.Filters = append(vv.Filters, filter{ID: prefix + "vf-" + f.value, Value: f.value, Label: f.label, N: n})
	}
	return vv
}

type invariantRow struct {
	Name, Result, Class, First, Message, NotEvaluable, Except string
}

func invariantRowOf(inv grade.InvariantEvidence) invariantRow {
	r := invariantRow{Name: inv.Name, Result: "held", Class: "green", First: stepOr(inv.FirstStep), Message: inv.Message, Except: strings.Join(inv.Except, ", ")}
	if !inv.Held {
		r.Result, r.Class = "violated", "red"
	}
	if n := len(inv.NotEvaluable); n > 0 {
		steps := make([]string, 0, 5)
		for i, s := range inv.NotEvaluable {
			if i == 5 {
				steps = append(steps, fmt.Sprintf("+%d more", n-5))
				break
			}
			steps = append(steps, fmt.Sprint(s))
		}
		r.NotEvaluable = fmt.Sprintf("steps %s: %s", strings.Join(steps, ", "), inv.NotEvaluableMessage)
		if inv.Held {
			r.Result, r.Class = "held; not evaluable at some steps", "amber"
		}
	}
	return r
}

func stepOr(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

// factGroup is one table of the last section: the fixture, the builds,
// the options.
type factGroup struct {
	Title string
	Rows  [][2]string
}

func facts(rep *grade.Report) []factGroup {
	fx := rep.Fixture
	ev := rep.Evidence
	fixture := factGroup{Title: "Fixture", Rows: [][2]string{{"path", fx.Path}, {"sha256", fx.SHA256}, {"protocol", fx.Protocol}, {"steps", fmt.Sprint(fx.Steps)}}}
	if f := fx.Failure; f != nil {
		fixture.Rows = append(fixture.Rows, [2]string{"failure", fmt.Sprintf("step %d, oracle %s, signature %s", f.Step, f.Oracle, f.Signature)})
		if f.Evidence != "" {
			fixture.Rows = append(fixture.Rows, [2]string{"failure evidence", cut(f.Evidence, 600)})
		}
	} else {
		fixture.Rows = append(fixture.Rows, [2]string{"failure", "none: a contract"})
	}
	fixture.Rows = append(fixture.Rows, [2]string{"noise", fmt.Sprintf("%d fields left out of comparisons", len(ev.Noise))})
	build := func(name string, b grade.Build, clock, stopped string, exit *kavach.Exit) factGroup {
		g := factGroup{Title: name, Rows: [][2]string{{"path", b.Path}, {"args", strings.Join(b.Args, " ")}, {"sha256", b.SHA256}, {"version", b.Version}, {"clock", clock}}}
		if stopped != "" {
			g.Rows = append(g.Rows, [2]string{"replay stopped", stopped})
		}
		if exit != nil {
			s := fmt.Sprintf("status %d", exit.Status)
			if exit.Signal != "" {
				s += ", signal " + exit.Signal
			}
			g.Rows = append(g.Rows, [2]string{"exit", s})
		}
		return g
	}
	old := build("Old build", rep.Builds.Old, ev.Old.Clock, ev.Old.Stopped, nil)
	old.Rows = append(old.Rows, [2]string{"replays", fmt.Sprint(ev.Old.Runs)})
	o := rep.Options
	opts := factGroup{Title: "Options", Rows: [][2]string{
		{"variants", fmt.Sprint(o.Variants)}, {"min_variants", fmt.Sprint(o.MinVariants)}, {"seed", fmt.Sprint(o.Seed)},
		{"jobs", fmt.Sprint(o.Jobs)}, {"fail_fast", fmt.Sprint(o.FailFast)}, {"step_timeout_ms", fmt.Sprint(o.StepTimeoutMS)},
		{"start_timeout_ms", fmt.Sprint(o.StartTimeoutMS)}, {"invariants", o.Invariants}, {"below_floor", fmt.Sprint(o.BelowFloor)},
		{"kavach_version", rep.KavachVersion},
		{"durations_ms", fmt.Sprintf("old replays %d, new replay %d, variants %d, total %d", rep.DurationsMS.Old, rep.DurationsMS.New, rep.DurationsMS.Variants, rep.DurationsMS.Total)},
	}}
	if rep.Network != "" {
		opts.Rows = append(opts.Rows, [2]string{"network", rep.Network})
	}
	if fl := ev.Floor; fl != nil {
		seed := "any"
		if fl.Floor.Seed != nil {
			seed = fmt.Sprint(*fl.Floor.Seed)
		}
		opts.Rows = append(opts.Rows, [2]string{"floor", fmt.Sprintf("min_variants %d, variants %d, seed %s; graded below it: %s",
			fl.Floor.MinVariants, fl.Floor.Variants, seed, firstNonEmpty(fl.Below(), "no"))})
	}
	return []factGroup{fixture, old, build("New build", rep.Builds.New, ev.New.Clock, ev.New.Stopped, ev.New.Exit), opts}
}
