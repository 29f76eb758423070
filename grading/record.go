package grading

import (
	"errors"
	"fmt"
	"github.com/kavach-dev/kavach/internal/jsonout"
	"io"
	"net"
	"strconv"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/record"
)

// Recorded is what `kavach record` recorded to Fixture, and how the
// recording ended.
type Recorded struct {
	Fixture string
	Result  record.Result
}

// PrintSummary says what was recorded and how it ended, as `kavach
// record` says it on stderr: the counts, and the failure or, with none,
// how to mark one.
func (r Recorded) PrintSummary(w io.Writer) {
	res, out := r.Result, r.Fixture
	if res.Reason != "" {
		fmt.Fprintf(w, "kavach: %s: %d requests, %d replies on %d connections (%s)\n",
			out, res.Stats.Requests, res.Stats.Responses, res.Stats.Conns, res.Reason)
	}
	if st := res.State; st != nil {
		fmt.Fprintf(w, "kavach: state: %s\n", StateLine(st))
	}
	if f := res.Failure; f != nil {
		fmt.Fprintf(w, "kavach: failure at step %d: %s\n", f.Step, f.Signature)
	} else if res.Reason != "" {
		fmt.Fprintf(w, "kavach: no failure recorded: %s is a contract (kavach diff holds every step to the recording); to grade it as an incident, mark it with 'kavach mark %s --step N --oracle ...'\n", out, out)
	}
}

// PrintJSON prints what was recorded as `kavach record --json` does.
func (r Recorded) PrintJSON(w io.Writer) error {
	res := r.Result
	js := recordJSON{Fixture: r.Fixture, Requests: res.Stats.Requests, Responses: res.Stats.Responses,
		Connections: res.Stats.Conns, Ended: res.Reason}
	if f := res.Failure; f != nil {
		js.Failure = &recordFailure{Step: f.Step, Signature: f.Signature}
	}
	js.State = res.State
	return jsonout.Print(w, js)
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

// StateLine says on one line what a fixture holds of the state its
// recording started from, for kavach record and kavach show.
func StateLine(st *fixtures.State) string {
	what := fmt.Sprintf("%s, %d keys, %d bytes", st.Mode, st.Keys, st.Bytes)
	if st.Mode == fixtures.StateDir {
		files := "files"
		if st.Files == 1 {
			files = "file"
		}
		what = fmt.Sprintf("%s, %d %s, %d bytes", st.Mode, st.Files, files, st.Bytes)
	} else if st.Format != "" {
		what = fmt.Sprintf("%s, a %s data file of %d bytes", st.Mode, st.Format, st.Bytes)
	}
	if st.Note != "" {
		what += " (" + st.Note + ")"
	}
	return what
}

type recordFailure struct {
	Step      int    `json:"step"`
	Signature string `json:"signature"`
}

// CheckAddr says what is wrong with a HOST:PORT address.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("not a HOST:PORT address")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	if host == "" {
		return errors.New("no host")
	}
	return nil
}
