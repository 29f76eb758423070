package textreport

import (
	"fmt"
	"io"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/internal/jsonout"
)

// Recorded says what was recorded and how it ended, as `kavach
// record` says it on stderr: the counts, and the failure or, with none,
// how to mark one.
func Recorded(w io.Writer, r grading.Recorded) {
	res, out := r.Result, r.Fixture
	if res.Reason != "" {
		fmt.Fprintf(w, "kavach: %s: %d requests, %d replies on %d connections (%s)\n",
			out, res.Stats.Requests, res.Stats.Responses, res.Stats.Conns, res.Reason)
	}
	if st := res.State; st != nil {
		fmt.Fprintf(w, "kavach: state: %s\n", grading.StateLine(st))
	}
	if f := res.Failure; f != nil {
		fmt.Fprintf(w, "kavach: failure at step %d: %s\n", f.Step, f.Signature)
	} else if res.Reason != "" {
		fmt.Fprintf(w, "kavach: no failure recorded: %s is a contract (kavach diff holds every step to the recording); to grade it as an incident, mark it with 'kavach mark %s --step N --oracle ...'\n", out, out)
	}
}

// RecordedJSON prints what was recorded as `kavach record --json` does.
func RecordedJSON(w io.Writer, r grading.Recorded) error {
	res := r.Result
	js := recordJSON{Fixture: r.Fixture, Requests: res.Stats.Requests, Responses: res.Stats.Responses,
		Connections: res.Stats.Conns, Ended: res.Reason}
	if f := res.Failure; f != nil {
		js.Failure = &recordFailure{Step: f.Step, Signature: f.Signature}
	}
	js.State = res.State
	return jsonout.Print(w, js)
}

// Cuts says what an always-on recording (record.Keep) cut, as
// `kavach record --keep` says it on stderr: the counts, why it ended, and
// each cut's path in order, or that there was none.
func Cuts(w io.Writer, r grading.Recorded) {
	res := r.Result
	fmt.Fprintf(w, "kavach: %d requests, %d replies on %d connections (%s)\n",
		res.Stats.Requests, res.Stats.Responses, res.Stats.Conns, res.Reason)
	for _, p := range res.Cuts {
		fmt.Fprintf(w, "kavach: cut %s\n", p)
	}
	if len(res.Cuts) == 0 {
		fmt.Fprintln(w, "kavach: no cut: no failure was detected and none was asked for")
	}
}

// CutsJSON prints what an always-on recording did as `kavach record
// --keep --json` does: its counts, why it ended, and its cuts in order.
func CutsJSON(w io.Writer, r grading.Recorded) error {
	res := r.Result
	cuts := res.Cuts
	if cuts == nil {
		cuts = []string{}
	}
	return jsonout.Print(w, struct {
		Cuts        []string `json:"cuts"`
		Requests    uint64   `json:"requests"`
		Responses   uint64   `json:"responses"`
		Connections uint64   `json:"connections"`
		Ended       string   `json:"ended"`
	}{cuts, res.Stats.Requests, res.Stats.Responses, res.Stats.Conns, res.Reason})
}

// recordJSON is `kavach record --json`'s output.
type recordJSON struct {
	Fixture     string         `json:"fixture"`
	Requests    uint64         `json:"requests"`
	Responses   uint64         `json:"responses"`
	Connections uint64         `json:"connections"`
	Ended       string         `json:"ended"`   // why the recording ended
	Failure     *recordFailure `json:"failure"` // null: none recorded; mark it with kavach mark
	// State is what the fixture holds of the state the service held when
	// the recording started; absent when Kavach started the build.
	State *fixtures.State `json:"state,omitempty"`
}

type recordFailure struct {
	Step      int    `json:"step"`
	Signature string `json:"signature"`
}
