package grade

import (
	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/invariants"
	"github.com/kavach-dev/kavach/replay"
)

// checked is a trace's invariant results, and per step the invariants it
// violated and those that could not be evaluated there.
type checked struct {
	results      []invariants.Result
	violated     map[int][]string
	notEvaluable map[int][]string
	applied      map[int][]string // the invariants that applied at each step
}

// checkInvariants evaluates the invariants on a trace of a replay of the
// fixture (kind "") or of a variant of that kind, whose invariants
// excepting it are not checked. With no invariants, or an integration
// that cannot inspect requests, nothing is checked.
func checkInvariants(set *invariants.Set, codec kavach.Integration, tr *replay.Trace, kind string) checked {
	c := checked{violated: map[int][]string{}, notEvaluable: map[int][]string{}, applied: map[int][]string{}}
	if set == nil {
		return c
	}
	ab := codec.Abilities()
	if ab.Inspect == nil || ab.Writes == nil {
		return c
	}
	steps := make([]invariants.Step, len(tr.Steps))
	for i, s := range tr.Steps {
		writes, value := ab.Writes(s.Request)
		steps[i] = invariants.Step{N: s.N, Time: s.Virtual, Request: ab.Inspect(s.Request), Writes: writes, Sets: value,
			Replies: s.Output, Outcome: s.Outcome.String(), Ran: s.Ran}
	}
	c.results = set.CheckVariant(steps, kind)
	for _, r := range c.results {
		for _, n := range r.Violations {
			c.violated[n] = append(c.violated[n], r.Name)
		}
		for _, n := range r.NotEvaluable {
			c.notEvaluable[n] = append(c.notEvaluable[n], r.Name)
		}
		for _, n := range r.Applied {
			c.applied[n] = append(c.applied[n], r.Name)
		}
	}
	return c
}

// Violated is, per step of a trace, the invariants of set it violates
// (kavach replay judges an invariant failure with it).
func Violated(set *invariants.Set, codec kavach.Integration, tr *replay.Trace) map[int][]string {
	return checkInvariants(set, codec, tr, "").violated
}

// message is the first violation message at step n, or "".
func (c checked) message(n int) string {
	for _, r := range c.results {
		if r.FirstStep == n {
			return r.Message
		}
	}
	for _, r := range c.results {
		for _, v := range r.Violations {
			if v == n {
				return r.Name + " does not hold"
			}
		}
	}
	return ""
}
