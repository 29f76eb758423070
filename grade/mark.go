package grade

import (
	"fmt"
	"slices"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/invariants"
	"github.com/kavach-dev/kavach/replay"
)

// CheckMark says why the recording does not show the failure f (nil when
// it does): a crash marked on a step the service answered, a hang on a
// step answered, an error oracle on a step whose reply it does not fire
// on, an invariant that holds at the step or cannot be evaluated there.
// It is what `kavach mark` refuses without --force. set may be nil when
// the oracle is no invariant.
func CheckMark(fx *fixtures.Fixture, in kavach.Integration, set *invariants.Set, f kavach.Failure) error {
	if in == nil {
		return nil // nothing to tell outcomes by
	}
	rec := replay.Recorded(fx.Events, in)
	if f.Step < 1 || f.Step > len(rec) {
		return fmt.Errorf("step %d: the fixture has steps 1 to %d", f.Step, len(rec))
	}
	s := rec[f.Step-1]
	got := s.Outcome.String()
	if s.Outcome.Kind == kavach.Error {
		got = kavach.ErrorSignature(s.Outcome)
	}
	o := f.Oracle
	switch {
	case o.Invariant != "":
		if set == nil || !set.Has(o.Invariant) {
			return fmt.Errorf("invariant %q: no invariants file declares it", o.Invariant)
		}
		tr := &replay.Trace{Steps: rec}
		c := checkInvariants(set, in, tr, "")
		if slices.Contains(c.notEvaluable[f.Step], o.Invariant) {
			for _, r := range c.results {
				if r.Name == o.Invariant {
					return fmt.Errorf("invariant %s cannot be evaluated on the recording at step %d (%s)", o.Invariant, f.Step, r.NotEvaluableMessage)
				}
			}
		}
		if !slices.Contains(c.violated[f.Step], o.Invariant) {
			return fmt.Errorf("invariant %s holds at step %d of the recording (recorded %s): it is not the failure there", o.Invariant, f.Step, got)
		}
	case !o.Fires(s.Outcome):
		return fmt.Errorf("step %d was recorded %s, which the oracle %s does not fire on", f.Step, got, o)
	}
	return nil
}
