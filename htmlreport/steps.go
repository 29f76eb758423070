package htmlreport

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kavach-dev/kavach/grade"
)

// stepsView is the per-step table: every step the report lists, its
// request, the recorded, old and new outcomes and answers, and a status;
// a checkbox narrows it to the rows that differ (CSS, no script).
type stepsView struct {
	ID       string // the checkbox's id
	Rows     []stepRow
	Differ   int // rows shown by the filter
	Omitted  int // steps of a long recording the report does not list
	Unlisted int // steps the report lists that the table leaves out (maxStepRows)
}

// maxStepRows bounds the steps table, so that a long recording's page
// stays small: past it, the steps that differ are listed first, then
// those answered as recorded; the report's JSON has every one.
const maxStepRows = 1000

// stepRow is one step. Status is a few words for a person; Class colours
// the row (same, differs, failure, notrun, noise); Differ puts it in the
// filtered view. A new status (say "explained (inputs differ)", for a
// step after the failure the report explains) is one more case in
// stepStatus and, if it needs a colour, one more class in page.css.
type stepRow struct {
	Step     int
	Request  string
	Recorded string
	Old      string
	New      string
	Status   string
	Class    string
	Differ   bool
}

// buildSteps makes the per-step table of a report from its evidence: the
// new build's steps, with the old build's outcome beside each. The report
// keeps the old build's outcomes only (its answers before the failure are
// the recording's, noise aside, which is how noise is found).
func buildSteps(rep *grade.Report, prefix string) stepsView {
	ev := rep.Evidence
	sv := stepsView{ID: prefix + "steps-differ", Omitted: ev.Omitted}
	old := map[int]grade.StepEvidence{}
	for _, s := range ev.Old.Steps {
		old[s.Step] = s
	}
	noise := noiseOf(ev.Noise)
	diverged := map[int]bool{}
	for _, f := range rep.Findings {
		if f.Kind == grade.Diverged {
			diverged[f.Step] = true
		}
	}
	explainedList := rep.Explained
	if explainedList == nil {
		explainedList = grade.Explain(ev) // a report from before they were listed
	}
	explained := map[int]grade.Explained{}
	for _, e := range explainedList {
		explained[e.Step] = e
	}
	for _, s := range ev.New.Steps {
		r := stepRow{Step: s.Step, Request: cut(s.Request, 200)}
		counted, noisy := noise.Split(s.Diffs)
		recorded := s.RecordedOutput
		if recorded == nil && len(s.Diffs) == 0 {
			recorded = s.Output // no difference: the recording's answer is the new build's
		}
		r.Recorded = outcomeAnswer(s.Recorded.String(), recorded)
		before := ev.Contract || (ev.Failure.Step > 0 && s.Step < ev.Failure.Step)
		if o, ok := old[s.Step]; ok && o.Ran {
			r.Old = outcomeAnswer(o.Outcome.String(), o.Output) // answers kept after the failure
			if before && o.Outcome.Kind == o.Recorded.Kind {
				r.Old += ", as recorded"
				if len(noisy) > 0 {
					r.Old += " but for noise"
				}
			}
		} else {
			r.Old = "not run"
		}
		r.New = outcomeOr(s.Outcome, s.Ran)
		if s.Ran {
			r.New = outcomeAnswer(r.New, s.Output)
		}
		r.Status, r.Class, r.Differ = stepStatus(rep, s, len(counted) > 0, len(noisy) > 0, diverged[s.Step])
		if e, ok := explained[s.Step]; ok {
			r.Status, r.Class = explainedStatus(e), "after"
		}
		if r.Differ {
			sv.Differ++
		}
		sv.Rows = append(sv.Rows, r)
	}
	if len(sv.Rows) > maxStepRows {
		// The steps that differ first, then those answered as recorded,
		// up to the bound; the table keeps the steps' order.
		room := maxStepRows - min(sv.Differ, maxStepRows)
		differ := maxStepRows - room
		kept := sv.Rows[:0]
		sv.Differ = 0
		for _, r := range sv.Rows {
			switch {
			case r.Differ && differ > 0:
				differ--
				sv.Differ++
			case !r.Differ && room > 0:
				room--
			default:
				sv.Unlisted++
				continue
			}
			kept = append(kept, r)
		}
		sv.Rows = kept
	}
	return sv
}

// stepStatus says how one step of the new build's replay stands against
// the recording: the failing step, an answer that differs where it
// counts, one that differs after the failure (which the fix may change),
// noise only, as recorded, or not run.
func stepStatus(rep *grade.Report, s grade.StepEvidence, counted, noisy, diverged bool) (status, class string, differ bool) {
	ev := rep.Evidence
	F := ev.Failure.Step
	differs := counted || s.Outcome.Kind != s.Recorded.Kind
	var violated string
	if len(s.Violated) > 0 {
		violated = "; invariant " + strings.Join(s.Violated, ", ") + " violated"
	}
	switch {
	case !s.Ran:
		return "not run", "notrun", false
	case s.Contained != "":
		return "contained, not compared: " + s.Contained, "notrun", false
	case !ev.Contract && s.Step == F && s.Outcome.Kind == s.Recorded.Kind && !counted:
		return "the failing step: failed the recorded way again" + violated, "failure", true
	case !ev.Contract && s.Step == F:
		return "the failing step: answered otherwise" + violated, "failure", true
	case differs && (ev.Contract || s.Step < F):
		return "differs from the recording" + violated, "differs", true
	case differs && diverged:
		return "differs after the failure, not explained by the fix" + violated, "differs", true
	case differs:
		return "differs after the failure (the fix may change it)" + violated, "after", true
	case violated != "":
		return "as recorded" + violated, "differs", true
	case noisy:
		return "as recorded, but for noise", "noise", false
	}
	return "as recorded", "same", false
}

// explainedStatus says why the fix explains a step after the failure,
// and by which rule: "explained after the failure: what it read differs
// (k digest, k access); observed".
func explainedStatus(e grade.Explained) string {
	why := map[string]string{
		grade.ReasonInputs:  "what it read differs between the builds",
		grade.ReasonRefusal: "both builds refuse the failing command here, on the same inputs (a changed refusal)",
		grade.ReasonShown:   "the recording or the old build failed here",
		grade.ReasonDepends: "it touches state a changed step wrote",
	}[e.Reason]
	if why == "" {
		why = e.Reason
	}
	if e.Reason == grade.ReasonInputs && len(e.Inputs) > 0 {
		var fields []string
		for i, f := range e.Inputs {
			if i == 3 {
				fields = append(fields, fmt.Sprintf("+%d more", len(e.Inputs)-3))
				break
			}
			fields = append(fields, f.Field)
		}
		why += " (" + strings.Join(fields, ", ") + ")"
	}
	return "explained after the failure: " + why + "; " + e.Rule
}

// outcomeAnswer is an outcome and, when there is one, its answer on one
// line, cut short.
func outcomeAnswer(outcome string, output []any) string {
	if len(output) == 0 {
		return outcome
	}
	return outcome + ": " + oneLine(output)
}

// oneLine is a step's normalized replies as compact JSON, cut to 160 bytes.
func oneLine(output []any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(output); err != nil {
		return fmt.Sprint(output)
	}
	return cut(strings.TrimSpace(b.String()), 160)
}

// failingStep shows the failing step's recorded, old and new answers side
// by side, as the finding shows its own step: for every verdict whose
// finding is elsewhere (a variant, another step) or that has none (fixed,
// unverified). A contract has no failing step.
func failingStep(rep *grade.Report) *findingView {
	ev := rep.Evidence
	F := ev.Failure.Step
	if ev.Contract || F == 0 {
		return nil
	}
	if len(rep.Findings) > 0 {
		if f := rep.Findings[0]; f.Kind != grade.VariantFailed && f.Step == F {
			return nil // the finding shows it
		}
	}
	found := false
	for _, s := range ev.New.Steps {
		found = found || s.Step == F
	}
	if !found {
		return nil
	}
	fv := buildFinding(rep, grade.Finding{Verdict: grade.Verdict{Step: F}})
	fv.Title = fmt.Sprintf("step %d, where the old build failed (%s)", F, ev.Failure.Signature)
	fv.Detail = ""
	return fv
}
