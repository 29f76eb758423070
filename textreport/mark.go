package textreport

import (
	"fmt"
	"io"
	"strings"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/internal/jsonout"
)

// MarkedJSON prints what was marked as `kavach mark --json` does.
func MarkedJSON(w io.Writer, m grading.Marked) error {
	a := m.Amendment
	out := markJSON{Fixture: m.Fixture, Floor: a.Floor}
	if f := a.Failure; f != nil {
		out.Step, out.Signature, out.Oracle, out.Exclude = f.Step, f.Signature, m.Oracle, f.ExcludeVariants
	}
	if a.Invariants != nil {
		out.Invariants = a.Invariants.Name
	}
	return jsonout.Print(w, out)
}

// Marked says what was marked, a line per change, as `kavach mark` does
// on stderr.
func Marked(w io.Writer, m grading.Marked) {
	a, path := m.Amendment, m.Fixture
	var f kavach.Failure
	if a.Failure != nil {
		f = *a.Failure
		fmt.Fprintf(w, "kavach: %s: failure at step %d, signature %s\n", path, f.Step, f.Signature)
	}
	if len(f.ExcludeVariants) > 0 {
		fmt.Fprintf(w, "kavach: %s: variants excluded: %s\n", path, strings.Join(f.ExcludeVariants, ", "))
	}
	if a.Floor != nil {
		fmt.Fprintf(w, "kavach: %s: floor %s\n", path, FloorString(a.Floor))
	}
	if a.Invariants != nil {
		fmt.Fprintf(w, "kavach: %s: invariants %s embedded\n", path, a.Invariants.Name)
	}
}

// markJSON is `kavach mark --json`'s output.
type markJSON struct {
	Fixture    string          `json:"fixture"`
	Step       int             `json:"step,omitempty"` // the failure marked, if one was
	Signature  string          `json:"signature,omitempty"`
	Oracle     string          `json:"oracle,omitempty"`
	Exclude    []string        `json:"exclude,omitempty"`    // variant kinds excluded
	Invariants string          `json:"invariants,omitempty"` // the invariants file embedded
	Floor      *fixtures.Floor `json:"floor,omitempty"`      // the floor set, if one was
}
