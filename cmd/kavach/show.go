package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
)

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "render a fixture for a person",
		ArgsUsage: "FIXTURE",
		Description: withExample(
			"Prints the fixture's header and a table of its steps: step, connection, time offset,\n"+
				"request, response and outcome. --step N prints one step in full; --json prints one\n"+
				"JSON object per step (JSON Lines; fields in docs/cli.md).",
			"kavach show incident.kavach --step 12"),
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "step", Usage: "print step `N` in full"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON Lines, one object per step"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			path, err := oneArg(c, "FIXTURE")
			if err != nil {
				return err
			}
			fx, err := fixtures.Load(path)
			if err != nil {
				return fmt.Errorf("%w\nkavach show reads files written by 'kavach record'", err)
			}
			if fx.Warning != nil {
				fmt.Fprintf(c.App.ErrWriter, "kavach: warning: %v\n", fx.Warning)
			}
			v := newFixtureView(fx, codecFor(fx.Header.Protocol))
			switch {
			case c.IsSet("step"):
				n := c.Int("step")
				if n < 1 || n > len(v.steps) {
					return usagef("run 'kavach show "+path+"' to see the steps", "step %d: the fixture has steps 1 to %d", n, len(v.steps))
				}
				if c.Bool("json") {
					return v.writeJSON(c.App.Writer, n)
				}
				v.writeStep(c.App.Writer, n)
				return nil
			case c.Bool("json"):
				return v.writeJSON(c.App.Writer, 0)
			}
			v.writeTable(c.App.Writer)
			return nil
		},
	}
}

// fixtureView renders a fixture's steps.
type fixtureView struct {
	fx    *fixtures.Fixture
	codec kavach.Codec // nil: show printable bytes
	steps []kavach.Step
}

func newFixtureView(fx *fixtures.Fixture, codec kavach.Codec) *fixtureView {
	return &fixtureView{fx: fx, codec: codec, steps: kavach.Steps(fx.Events, codec)}
}

const summaryWidth = 48

// describe renders one message on one line, cut to max bytes.
func (v *fixtureView) describe(ev kavach.Event, max int) string {
	if ev.Flags&kavach.ParseError != 0 {
		return "(unparsed) " + printable(ev.Data, max)
	}
	if v.codec == nil {
		return printable(ev.Data, max)
	}
	if ev.Dir == kavach.Request {
		return v.codec.DescribeRequest(ev.Data, max)
	}
	return v.codec.DescribeResponse(ev.Data, max)
}

// outcome says how a recorded step ended, as far as the recording shows.
func (v *fixtureView) outcome(s kavach.Step) string {
	switch {
	case len(s.Responses) > 0 && v.codec != nil:
		if c, ok := v.codec.(kavach.Classifier); ok {
			data := make([][]byte, len(s.Responses))
			for i, r := range s.Responses {
				data[i] = r.Data
			}
			return c.Classify(s.Request.Data, data).String()
		}
		return string(kavach.OK)
	case len(s.Responses) > 0:
		return string(kavach.OK)
	case s.Closed:
		return string(kavach.Crash)
	}
	return "no-reply"
}

func (v *fixtureView) responseSummary(s kavach.Step, max int) string {
	switch len(s.Responses) {
	case 0:
		if s.Closed {
			return "(connection closed)"
		}
		return "(none)"
	case 1:
		return v.describe(s.Responses[0], max)
	}
	return fmt.Sprintf("%s (+%d more)", v.describe(s.Responses[0], max), len(s.Responses)-1)
}

func (v *fixtureView) writeHeader(w io.Writer) {
	h := v.fx.Header
	fmt.Fprintf(w, "fixture   %s\n", v.fx.Path)
	fmt.Fprintf(w, "protocol  %s\n", h.Protocol)
	switch {
	case h.Build != nil:
		fmt.Fprintf(w, "build     %s (sha256 %.12s, version %s)\n", h.Build.Path, h.Build.SHA256, orDash(h.Build.Version))
	case h.Upstream != "":
		fmt.Fprintf(w, "upstream  %s\n", h.Upstream)
	}
	if h.Launch != nil {
		fmt.Fprintf(w, "launch    %s\n", strings.Join(append([]string{h.Launch.Path}, h.Launch.Args...), " "))
	}
	dur := "unknown (recording did not end cleanly)"
	if v.fx.End != nil {
		dur = v.fx.End.Duration.String()
	}
	fmt.Fprintf(w, "recorded  %s, lasting %s\n", h.Start.UTC().Format(time.RFC3339Nano), dur)
	fmt.Fprintf(w, "events    %d in %d steps\n", len(v.fx.Events), len(v.steps))
	if f := v.fx.Failure; f != nil {
		fmt.Fprintf(w, "failure   step %d, oracle %s, signature %s\n", f.Step, f.Oracle, f.Signature)
		if f.Evidence != "" {
			first, rest, more := strings.Cut(f.Evidence, "\n")
			fmt.Fprintf(w, "evidence  %s\n", printable([]byte(first), 200))
			if more {
				fmt.Fprintf(w, "          (+%d lines: kavach show %s --step %d)\n", strings.Count(rest, "\n")+1, v.fx.Path, f.Step)
			}
		}
	} else {
		fmt.Fprintf(w, "failure   none: a contract (no failure); kavach diff holds every step to the recording (or mark a failure: kavach mark FIXTURE --step N --oracle ...)\n")
	}
	if fl := h.Floor; fl != nil {
		fmt.Fprintf(w, "floor     %s\n", floorString(fl))
	}
	for _, r := range v.fx.Redactions {
		fmt.Fprintf(w, "redacted  event %d: %s\n", r.Seq, r.Note)
	}
	for _, inv := range v.fx.Invariants {
		fmt.Fprintf(w, "invariants %s (%d bytes)\n", inv.Name, len(inv.Source))
	}
}

func (v *fixtureView) writeTable(w io.Writer) {
	v.writeHeader(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tCONN\tOFFSET\tREQUEST\tRESPONSE\tOUTCOME")
	for _, s := range v.steps {
		mark := ""
		if f := v.fx.Failure; f != nil && f.Step == s.N {
			mark = "  <- failure"
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s%s\n", s.N, s.Conn(), fmtOffset(s.Request.Offset),
			v.describe(s.Request, summaryWidth), v.responseSummary(s, summaryWidth), v.outcome(s), mark)
	}
	tw.Flush()
}

func (v *fixtureView) writeStep(w io.Writer, n int) {
	s := v.steps[n-1]
	fmt.Fprintf(w, "step      %d of %d\n", s.N, len(v.steps))
	fmt.Fprintf(w, "conn      %d\n", s.Conn())
	fmt.Fprintf(w, "offset    %s (event %d)\n", fmtOffset(s.Request.Offset), s.Request.Seq)
	fmt.Fprintf(w, "outcome   %s\n", v.outcome(s))
	if f := v.fx.Failure; f != nil && f.Step == n {
		fmt.Fprintf(w, "failure   oracle %s, signature %s\n", f.Oracle, f.Signature)
		for i, line := range strings.Split(strings.TrimRight(f.Evidence, "\n"), "\n") {
			label := "evidence"
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(w, "%-8s  %s\n", label, printable([]byte(line), 0))
		}
	}
	fmt.Fprintf(w, "request   %s\n", v.describe(s.Request, 4096))
	fmt.Fprintf(w, "  bytes   %q\n", s.Request.Data)
	for i, r := range s.Responses {
		fmt.Fprintf(w, "response  %d at %s (event %d): %s\n", i+1, fmtOffset(r.Offset), r.Seq, v.describe(r, 4096))
		fmt.Fprintf(w, "  bytes   %q\n", r.Data)
	}
	if len(s.Responses) == 0 {
		fmt.Fprintf(w, "response  %s\n", v.responseSummary(s, 0))
	}
}

// stepJSON is one line of `kavach show --json`; docs/cli.md documents it.
type stepJSON struct {
	Step      int      `json:"step"`
	Conn      uint64   `json:"conn"`
	Seq       uint64   `json:"seq"`
	OffsetNS  int64    `json:"offset_ns"`
	Request   string   `json:"request"`
	Response  string   `json:"response"`
	Responses []string `json:"responses"`
	Outcome   string   `json:"outcome"`
	Closed    bool     `json:"closed,omitempty"`
	Failure   bool     `json:"failure,omitempty"`
}

// writeJSON writes step n, or every step when n is 0, as JSON Lines.
func (v *fixtureView) writeJSON(w io.Writer, n int) error {
	enc := json.NewEncoder(w)
	for _, s := range v.steps {
		if n != 0 && s.N != n {
			continue
		}
		line := stepJSON{
			Step: s.N, Conn: s.Conn(), Seq: s.Request.Seq, OffsetNS: int64(s.Request.Offset),
			Request: v.describe(s.Request, 4096), Response: v.responseSummary(s, 4096),
			Responses: []string{}, Outcome: v.outcome(s), Closed: s.Closed,
			Failure: v.fx.Failure != nil && v.fx.Failure.Step == s.N,
		}
		for _, r := range s.Responses {
			line.Responses = append(line.Responses, v.describe(r, 4096))
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

// printable renders bytes for a terminal: printable ASCII as is, the rest
// escaped, cut to about max bytes (max <= 0: no cut).
func printable(b []byte, max int) string {
	var sb strings.Builder
	for i, c := range b {
		if max > 0 && sb.Len() >= max {
			fmt.Fprintf(&sb, "… (%d bytes)", len(b))
			break
		}
		switch {
		case c == '\r' && i+1 < len(b) && b[i+1] == '\n':
		case c == '\n':
			sb.WriteString(`\n`)
		case c >= 0x20 && c < 0x7f:
			sb.WriteByte(c)
		default:
			fmt.Fprintf(&sb, `\x%02x`, c)
		}
	}
	return sb.String()
}

func fmtOffset(d time.Duration) string {
	return fmt.Sprintf("%.3fs", d.Seconds())
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
