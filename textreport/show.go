package textreport

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grading"
)

// FixtureView renders a fixture for a person (kavach show): its header
// and its steps, read as a stream: a fixture of millions of steps is
// shown in the memory of a few thousand.
type FixtureView struct {
	fx    *fixtures.Summary
	codec kavach.Integration // nil: show printable bytes
}

// View summarizes the fixture at path to be shown (grading.Open,
// ToShow), its steps described by the integration of its protocol
// (printable bytes when Kavach speaks none).
func View(path string) (*FixtureView, error) {
	rec, err := grading.Open(path, grading.ToShow)
	if err != nil {
		return nil, err
	}
	return &FixtureView{fx: rec.Summary(), codec: rec.Codec()}, nil
}

// Warning is the fixture's warning (a recording that did not end
// cleanly), or nil.
func (v *FixtureView) Warning() error { return v.fx.Warning }

// Steps is how many steps the fixture has, numbered from 1.
func (v *FixtureView) Steps() int { return v.fx.Steps }

// tableChunk is how many rows of the steps table are aligned together:
// the table is written as it is read, so its columns are as wide as the
// widest cell of their chunk.
const tableChunk = 1024

const summaryWidth = 48

// describe renders one message on one line, cut to max bytes.
func (v *FixtureView) describe(ev kavach.Event, max int) string {
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
func (v *FixtureView) outcome(s kavach.Step) string {
	switch {
	case len(s.Responses) > 0 && v.codec != nil:
		data := make([][]byte, len(s.Responses))
		for i, r := range s.Responses {
			data[i] = r.Data
		}
		return v.codec.Classify(s.Request.Data, data).String()
	case len(s.Responses) > 0:
		return string(kavach.OK)
	case s.Closed:
		return string(kavach.Crash)
	case s.Request.Flags&kavach.Foreign != 0:
		return "-"
	}
	return "no-reply"
}

func (v *FixtureView) responseSummary(s kavach.Step, max int) string {
	var first []string
	if len(s.Responses) > 0 {
		first = []string{v.describe(s.Responses[0], max)}
	}
	return v.summarize(s, first)
}

// summarize is responseSummary from the descriptions of the step's
// responses, the first at least.
func (v *FixtureView) summarize(s kavach.Step, described []string) string {
	switch len(s.Responses) {
	case 0:
		if s.Closed {
			return "(connection closed)"
		}
		if s.Request.Flags&kavach.Foreign != 0 {
			return "(another client's write, not through the proxy)"
		}
		return "(none)"
	case 1:
		return described[0]
	}
	return fmt.Sprintf("%s (+%d more)", described[0], len(s.Responses)-1)
}

func (v *FixtureView) writeHeader(w io.Writer) {
	h := v.fx.Header
	// Every field comes from the fixture, which anyone may have written:
	// a control character (a terminal escape sequence) is shown escaped.
	fmt.Fprintf(w, "fixture   %s\n", safe(v.fx.Path))
	fmt.Fprintf(w, "protocol  %s\n", safe(h.Protocol))
	switch {
	case h.Build != nil:
		fmt.Fprintf(w, "build     %s (sha256 %.12s, version %s)\n", safe(h.Build.Path), safe(h.Build.SHA256), safe(cmp.Or(h.Build.Version, "-")))
	case h.Upstream != "":
		fmt.Fprintf(w, "upstream  %s\n", safe(h.Upstream))
	}
	if h.Launch != nil {
		args := append([]string{h.Launch.Path}, h.Launch.Args...)
		for i, a := range args {
			args[i] = safe(a)
		}
		fmt.Fprintf(w, "launch    %s\n", strings.Join(args, " "))
	}
	dur := "unknown (recording did not end cleanly)"
	if v.fx.End != nil {
		dur = v.fx.End.Duration.String()
	}
	fmt.Fprintf(w, "recorded  %s, lasting %s\n", h.Start.UTC().Format(time.RFC3339Nano), dur)
	fmt.Fprintf(w, "events    %d in %d steps\n", v.fx.Events, v.fx.Steps)
	if f := v.fx.Failure; f != nil {
		fmt.Fprintf(w, "failure   step %d, oracle %s, signature %s\n", f.Step, safe(f.Oracle.String()), safe(f.Signature))
		if f.Evidence != "" {
			first, rest, more := strings.Cut(f.Evidence, "\n")
			// Room for kavach mark's evidence (a reply cut to 200 bytes
			// and its true size) whole: cut again, its size would be the
			// cut text's.
			fmt.Fprintf(w, "evidence  %s\n", printable([]byte(first), 320))
			if more {
				fmt.Fprintf(w, "          (+%d lines: kavach show %s --step %d)\n", strings.Count(rest, "\n")+1, safe(v.fx.Path), f.Step)
			}
		}
	} else {
		fmt.Fprintf(w, "failure   none: a contract (no failure); kavach diff holds every step to the recording (or mark a failure: kavach mark FIXTURE --step N --oracle ...)\n")
	}
	switch st := v.fx.State; {
	case st != nil:
		fmt.Fprintf(w, "state     %s\n", safe(grading.StateLine(st)))
		switch {
		case st.Mode == fixtures.StateDir:
			fmt.Fprintf(w, "          warning: it holds the files of the build's state directory as they were: treat the fixture as you treat that data\n")
		case st.Keys > 0 || st.Bytes > 0:
			fmt.Fprintf(w, "          warning: it holds the service's data as it was (%s): treat the fixture as you treat that data\n",
				map[bool]string{true: "its whole snapshot", false: "the keys the recording names"}[st.Whole])
		}
	case h.State == fixtures.StateNone:
		fmt.Fprintf(w, "state     none (asked for none: replays start each build empty, and a read of data the service held differs)\n")
	case h.State != "":
		fmt.Fprintf(w, "state     %s, not written (the recording did not end cleanly)\n", safe(h.State))
	case h.Upstream != "":
		fmt.Fprintf(w, "state     none: recorded before fixtures held the service's state; its replays start each build empty\n")
	}
	if fl := h.Floor; fl != nil {
		fmt.Fprintf(w, "floor     %s\n", FloorString(fl))
	}
	for _, r := range v.fx.Redactions {
		fmt.Fprintf(w, "redacted  event %d: %s\n", r.Seq, safe(r.Note))
	}
	for _, inv := range v.fx.Invariants {
		fmt.Fprintf(w, "invariants %s (%d bytes)\n", safe(inv.Name), len(inv.Source))
	}
}

// safe is s as it may go to a terminal: as it is when it holds no control
// character (C0, DEL, C1) nor invalid UTF-8, else quoted with them escaped.
func safe(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return strconv.Quote(s)
		}
	}
	return s
}

// WriteTable writes the header and a table of the steps.
func (v *FixtureView) WriteTable(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	v.writeHeader(bw)
	fmt.Fprintln(bw)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tCONN\tOFFSET\tREQUEST\tRESPONSE\tOUTCOME")
	rows := 0
	err := v.renderSteps(func(b []byte, s kavach.Step) ([]byte, error) {
		mark := ""
		if f := v.fx.Failure; f != nil && f.Step == s.N {
			mark = "  <- failure"
		}
		return fmt.Appendf(b, "%d\t%d\t%s\t%s\t%s\t%s%s\n", s.N, s.Conn(), fmtOffset(s.Request.Offset),
			v.describe(s.Request, summaryWidth), v.responseSummary(s, summaryWidth), v.outcome(s), mark), nil
	}, func(b []byte) error {
		// A batch is whole rows; the table is aligned a chunk at a time.
		if _, err := tw.Write(b); err != nil {
			return err
		}
		if rows += renderBatch; rows%tableChunk == 0 {
			return tw.Flush()
		}
		return nil
	})
	return errors.Join(err, tw.Flush(), bw.Flush())
}

// step reads step n.
func (v *FixtureView) step(n int) (kavach.Step, error) {
	var found kavach.Step
	err := v.fx.EachStep(func(s kavach.Step) error {
		if s.N == n {
			found = s
			return errFound
		}
		return nil
	})
	if err == errFound {
		err = nil
	}
	return found, err
}

// errFound stops a walk over the steps at the one it looked for.
var errFound = errors.New("found")

// WriteStep writes step n in full.
func (v *FixtureView) WriteStep(w io.Writer, n int) error {
	s, err := v.step(n)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "step      %d of %d\n", s.N, v.fx.Steps)
	fmt.Fprintf(w, "conn      %d\n", s.Conn())
	fmt.Fprintf(w, "offset    %s (event %d)\n", fmtOffset(s.Request.Offset), s.Request.Seq)
	fmt.Fprintf(w, "outcome   %s\n", v.outcome(s))
	if f := v.fx.Failure; f != nil && f.Step == n {
		fmt.Fprintf(w, "failure   oracle %s, signature %s\n", safe(f.Oracle.String()), safe(f.Signature))
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
	return nil
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

// WriteJSON writes step n, or every step when n is 0, as JSON Lines.
func (v *FixtureView) WriteJSON(w io.Writer, n int) error {
	if n != 0 {
		s, err := v.step(n)
		if err != nil {
			return err
		}
		b, err := v.appendJSON(nil, s)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	err := v.renderSteps(v.appendJSON, func(b []byte) error {
		_, err := bw.Write(b)
		return err
	})
	return errors.Join(err, bw.Flush())
}

// appendJSON appends step s's line of JSON Lines to b.
func (v *FixtureView) appendJSON(b []byte, s kavach.Step) ([]byte, error) {
	line := stepJSON{
		Step: s.N, Conn: s.Conn(), Seq: s.Request.Seq, OffsetNS: int64(s.Request.Offset),
		Request: v.describe(s.Request, 4096), Responses: make([]string, len(s.Responses)),
		Outcome: v.outcome(s), Closed: s.Closed,
		Failure: v.fx.Failure != nil && v.fx.Failure.Step == s.N,
	}
	for i, r := range s.Responses {
		line.Responses[i] = v.describe(r, 4096)
	}
	line.Response = v.summarize(s, line.Responses)
	return line.appendJSON(b), nil
}

// appendJSON appends the line as encoding/json writes it (fields in
// order, HTML characters escaped), with a newline, without reflection:
// show --json writes millions of them.
func (l *stepJSON) appendJSON(b []byte) []byte {
	b = strconv.AppendInt(append(b, `{"step":`...), int64(l.Step), 10)
	b = strconv.AppendUint(append(b, `,"conn":`...), l.Conn, 10)
	b = strconv.AppendUint(append(b, `,"seq":`...), l.Seq, 10)
	b = strconv.AppendInt(append(b, `,"offset_ns":`...), l.OffsetNS, 10)
	b = appendJSONString(append(b, `,"request":`...), l.Request)
	b = appendJSONString(append(b, `,"response":`...), l.Response)
	b = append(b, `,"responses":[`...)
	for i, r := range l.Responses {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, r)
	}
	b = appendJSONString(append(b, `],"outcome":`...), l.Outcome)
	if l.Closed {
		b = append(b, `,"closed":true`...)
	}
	if l.Failure {
		b = append(b, `,"failure":true`...)
	}
	return append(b, "}\n"...)
}

// appendJSONString appends s quoted as encoding/json quotes a string:
// control characters, quotes, backslashes and <, >, & escaped, invalid
// UTF-8 as U+FFFD, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(b, s[start:]...), '"')
}

// renderBatch is how many steps a renderSteps worker renders at a time.
const renderBatch = 256

// renderSteps renders every step of the fixture with render, on as many
// goroutines as Kavach may use, and gives write what they rendered in
// step order, as it comes. Rendering (describing requests and replies)
// costs more than reading, so this is what makes show keep up with a
// fixture of millions of steps. An error from render or write stops it.
func (v *FixtureView) renderSteps(render func([]byte, kavach.Step) ([]byte, error), write func([]byte) error) error {
	type job struct {
		steps []kavach.Step
		out   chan []byte
	}
	workers := max(1, runtime.GOMAXPROCS(0))
	jobs := make(chan job, workers)
	spare := make(chan []byte, 2*workers+2) // rendered batches' buffers, written and free
	order := make(chan chan []byte, 2*workers)
	var (
		failed atomic.Bool
		errMu  sync.Mutex
		first  error
		wg     sync.WaitGroup
	)
	fail := func(err error) {
		errMu.Lock()
		if first == nil {
			first = err
		}
		errMu.Unlock()
		failed.Store(true)
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				var b []byte
				select {
				case b = <-spare:
				default:
					b = make([]byte, 0, 64<<10)
				}
				for _, s := range j.steps {
					var err error
					if b, err = render(b, s); err != nil {
						fail(err)
						break
					}
				}
				j.out <- b
			}
		}()
	}
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		// Jobs are taken in the order they are queued, so waiting for
		// the oldest never waits for one that no worker will take.
		for out := range order {
			b := <-out
			if !failed.Load() {
				if err := write(b); err != nil {
					fail(err)
				}
			}
			select {
			case spare <- b[:0]: // write is done with it
			default:
			}
		}
	}()
	var batch []kavach.Step
	send := func() {
		out := make(chan []byte, 1)
		order <- out
		jobs <- job{batch, out}
		batch = nil
	}
	errStop := errors.New("stop")
	err := v.fx.EachStep(func(s kavach.Step) error {
		if failed.Load() {
			return errStop
		}
		if batch = append(batch, s); len(batch) == renderBatch {
			send()
		}
		return nil
	})
	if len(batch) > 0 && err == nil {
		send()
	}
	close(jobs)
	close(order)
	wg.Wait()
	<-wrote
	if err == errStop {
		err = nil
	}
	return errors.Join(err, first)
}

// printable renders bytes for a terminal: printable ASCII as is, the rest
// escaped, cut to about max bytes (max <= 0: no cut).
// A printable character outside ASCII (the "…" of a cut) is kept as is.
func printable(b []byte, max int) string {
	var sb strings.Builder
	for i := 0; i < len(b); i++ {
		c := b[i]
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
		case c >= utf8.RuneSelf:
			if r, n := utf8.DecodeRune(b[i:]); r != utf8.RuneError && unicode.IsPrint(r) {
				sb.Write(b[i : i+n])
				i += n - 1
				continue
			}
			fmt.Fprintf(&sb, `\x%02x`, c)
		default:
			fmt.Fprintf(&sb, `\x%02x`, c)
		}
	}
	return sb.String()
}

func fmtOffset(d time.Duration) string {
	return fmt.Sprintf("%.3fs", d.Seconds())
}

// FloorString renders a floor as kavach show and mark print it.
func FloorString(f *fixtures.Floor) string {
	s := fmt.Sprintf("min_variants >= %d, variants >= %d, seed ", f.MinVariants, f.Variants)
	if f.Seed == nil {
		return s + "any"
	}
	return s + fmt.Sprint(*f.Seed)
}
