// Package mcpserver is `kavach mcp`: a Model Context Protocol server on
// stdio with one tool, kavach_diff, which grades a new build against an
// incident exactly as `kavach diff` does: both call package grading, which
// grades, and package textreport, which prints, and the command gives the
// defaults of its flags (Config), so that the tool and the command line
// cannot drift apart; this package holds what is MCP's:
// the schemas, the shaping of results for an agent, progress,
// cancellation, and a transport that survives any input.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/internal/cut"
	"github.com/kavach-dev/kavach/internal/pathcheck"
	"github.com/kavach-dev/kavach/textreport"
)

// ToolName is the one tool the server serves.
const ToolName = "kavach_diff"

// Config is what the server needs from the command.
type Config struct {
	// Defaults are kavach diff's flags' defaults, which the tool's input
	// schema declares and a call that leaves a field out grades with.
	Defaults grading.Request
	// memo is the server's: an agent calls the tool after each attempt at
	// a fix, with the same old build and fixture, whose variants then run
	// on the old build once (grade.Memo).
	memo *grade.Memo
}

// Transport is MCP's stdio transport on r and w (the process's stdin and
// stdout when run as a command), one that answers bad input with errors
// instead of ending (lineTransport).
func Transport(r io.Reader, w io.Writer) mcp.Transport {
	if r == nil {
		r = strings.NewReader("")
	}
	return &lineTransport{r: io.NopCloser(r), w: nopWriteCloser{w}}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// Serve serves the tool until the client closes the connection or ctx
// ends. Gradings still running then are cancelled, and their builds
// stopped, before it returns.
func Serve(ctx context.Context, t mcp.Transport, cfg Config) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg.memo = grade.NewMemo()
	calls := &inflight{}
	server := mcp.NewServer(&mcp.Implementation{Name: "kavach", Title: "Kavach", Version: kavach.Version}, &mcp.ServerOptions{
		Instructions: "Kavach grades a candidate fix of a service against a recorded incident. Call " + ToolName +
			" after each attempt at a fix, with the old build (the one the incident was recorded on), the new build and the " +
			"fixture; read the verdict and the hint. Only the verdict \"fixed\" means the fix holds.",
	})
	in, out, err := schemas(cfg.Defaults)
	if err != nil {
		return err
	}
	mcp.AddTool(server, &mcp.Tool{
		Name:  ToolName,
		Title: "Grade a fix against a recorded incident",
		Description: "Grades a new build of a service against a recorded incident, as `kavach diff OLD NEW FIXTURE` does: " +
			"replays the fixture on the old build (which must fail the recorded way) and on the new build, then variants " +
			"of the incident, and returns one verdict: fixed, diverged@N (the new build answers step N, before the failure, " +
			"differently from the recording), still_failing@N, invariant_violated(NAME)@N, variant_failed(K)@N (a variant " +
			"of the incident, or an input the old build handled, fails on the new build) or unverified(REASON) (the evidence " +
			"is too thin to judge: not your fix's fault). A fixture with no failure is a contract: every step must answer as " +
			"recorded, and its verdict is held when it does. Several fixtures (fixture, then fixtures) are graded as a suite: " +
			"the verdict is the first red fixture's, and fixture_verdicts lists each. " +
			"The result holds the headline finding with its diff, a hint saying " +
			"what to do next, what was checked, and the path of the full JSON report (written to out, which may replace only a " +
			"Kavach report written there before, or to a new temporary file). Takes seconds to a few minutes; " +
			"progress is reported when a progress token is given. Relative paths are taken from the working directory " +
			"kavach mcp was started in (the client's configuration sets it); absolute paths are safest.",
		InputSchema:  in,
		OutputSchema: out,
		Annotations:  &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(true), OpenWorldHint: new(false)},
	}, func(hctx context.Context, req *mcp.CallToolRequest, input DiffInput) (*mcp.CallToolResult, DiffOutput, error) {
		if !calls.start() {
			return nil, DiffOutput{}, errors.New("kavach mcp is shutting down; call again on a new connection")
		}
		defer calls.done()
		// A grading ends with the call, or with the server.
		hctx, stop := context.WithCancel(hctx)
		defer stop()
		defer context.AfterFunc(ctx, stop)()
		return cfg.diff(hctx, req, input)
	})
	server.AddReceivingMiddleware(usageHint)
	err = server.Run(ctx, t)
	cancel()
	calls.closeAndWait()
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// usage says how to call the tool.
const usage = "Call " + ToolName + ` with {"old": "PATH", "new": "PATH", "fixture": "PATH"}, paths of the old build, ` +
	"the new build and the incident's fixture, and optionally the other fields of its input schema " +
	`(variants, min_variants, seed, jobs, fail_fast, step_timeout_ms, start_timeout_ms, invariants, out, below_floor, detail: "concise" or "full").`

// usageHint adds how to call the tool to the SDK's own errors for
// arguments that do not match the input schema (a missing field, a wrong
// type, a field it does not know), which it reports before the tool runs.
func usageHint(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) && strings.HasPrefix(rpcErr.Message, "unknown tool") {
			e := *rpcErr
			e.Message += ": kavach mcp serves one tool. " + usage
			return res, &e
		}
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError && len(r.Content) == 1 {
			if t, ok := r.Content[0].(*mcp.TextContent); ok {
				if strings.HasPrefix(t.Text, `validating "arguments"`) {
					t.Text = schemaError(t.Text) + "\n" + usage
				}
				t.Text = cutWords(t.Text)
			}
		}
		return res, err
	}
}

var (
	propertyError = regexp.MustCompile(`^validating "arguments": validating root: validating /properties/([^:]+): (.*)$`)
	boundError    = regexp.MustCompile(`^(minimum|maximum): (\S+) is (?:less|greater) than (\S+)$`)
	typeError     = regexp.MustCompile(`(?s)^type: (.*) has type "(\w+)", want "(\w+)"$`)
)

// schemaError says in a person's words what the SDK's schema validation
// found wrong with one argument ("minimum: -5/1 is less than 0.000000"
// becomes "variants" is -5: need 0 or more); others are left as they are.
func schemaError(msg string) string {
	m := propertyError.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	name, rule := `"`+m[1]+`"`, m[2]
	if b := boundError.FindStringSubmatch(rule); b != nil {
		need := "or more"
		if b[1] == "maximum" {
			need = "or less"
		}
		return fmt.Sprintf("%s is %s: need %s %s", name, number(b[2]), number(b[3]), need)
	}
	if t := typeError.FindStringSubmatch(rule); t != nil {
		return fmt.Sprintf("%s is %s (%s): need %s", name, jsonType(t[2]), echo(t[1]), jsonType(t[3]))
	}
	return name + ": " + rule
}

// number writes a bound's number as a person would: 0, not 0.000000;
// -5, not -5/1.
func number(s string) string {
	if r, ok := new(big.Rat).SetString(s); ok {
		if r.IsInt() {
			return r.Num().String()
		}
		return r.FloatString(3)
	}
	return s
}

// jsonType names a JSON Schema type with its article.
func jsonType(t string) string {
	switch t {
	case "integer", "array", "object":
		return map[string]string{"integer": "an integer", "array": "an array", "object": "an object"}[t]
	case "boolean":
		return "true or false"
	case "null":
		return "null"
	}
	return "a " + t
}

// inflight counts the tool calls running, so that the server waits for
// them (and their builds to stop) before it exits.
type inflight struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (f *inflight) start() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.wg.Add(1)
	return true
}

func (f *inflight) done() { f.wg.Done() }

func (f *inflight) closeAndWait() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.wg.Wait()
}

// DiffInput is the tool's input: `kavach diff`'s arguments and flags.
// Defaults (in the schema) are the command line's.
type DiffInput struct {
	Old            string   `json:"old" jsonschema:"path of the old build: the one the incident was recorded on, which must still fail the recorded way (a relative path is taken from the working directory kavach mcp was started in)"`
	New            string   `json:"new" jsonschema:"path of the new build: the candidate fix (a relative path is taken from the working directory kavach mcp was started in)"`
	Fixture        string   `json:"fixture" jsonschema:"path of the incident's fixture file (or a contract's: a fixture with no failure), written by kavach record; or a directory of .kavach files, graded as a suite in name order (a relative path is taken from the working directory kavach mcp was started in)"`
	Fixtures       []string `json:"fixtures,omitempty" jsonschema:"more fixtures (files, or directories of .kavach files) graded with fixture as a suite: the verdict is then the suite's (the first red fixture's in order, else the first unverified, else fixed or held), and fixture_verdicts lists each (a relative path is taken from the working directory kavach mcp was started in)"`
	Invariants     string   `json:"invariants,omitempty" jsonschema:"path of an invariants file to check (default: those embedded in the fixture, or the fixture's name with .invariants) (a relative path is taken from the working directory kavach mcp was started in)"`
	Variants       int      `json:"variants,omitempty" jsonschema:"generate at most this many variants of the incident (the default 64 grows by one per kind and cause, to 128)"`
	MinVariants    int      `json:"min_variants,omitempty" jsonschema:"call it fixed only with at least this many variants reproducing the failure on the old build"`
	Seed           uint64   `json:"seed,omitempty" jsonschema:"seed of the variant generator"`
	Jobs           int      `json:"jobs,omitempty" jsonschema:"replays run at once, for a suite across all its fixtures (0: as many as the CPUs kavach may use)"`
	FailFast       bool     `json:"fail_fast,omitempty" jsonschema:"stop running variants on the new build after the first it fails"`
	NoCheckpoints  bool     `json:"no_checkpoints,omitempty" jsonschema:"replay every step of every variant instead of starting it from each build's saved state before the step it changes (the same variants)"`
	StepTimeoutMS  int      `json:"step_timeout_ms,omitempty" jsonschema:"a step with no reply within this many milliseconds hangs"`
	StartTimeoutMS int      `json:"start_timeout_ms,omitempty" jsonschema:"a build not ready within this many milliseconds cannot be graded"`
	Detail         string   `json:"detail,omitempty" jsonschema:"concise: the headline finding only, long values cut (about 2,000 tokens at most); full: every finding, uncut"`
	Out            string   `json:"out,omitempty" jsonschema:"where to write the full JSON report (default: a new file in the temporary directory) (a relative path is taken from the working directory kavach mcp was started in)"`
	BelowFloor     bool     `json:"below_floor,omitempty" jsonschema:"grade with options below the fixture's floor: the verdict is then never fixed, at best unverified(below-floor: ...)"`
}

// VerdictParts is the verdict in its parts (grade.Verdict), embedded in
// DiffOutput beside the verdict as printed: its fields are the output's.
type VerdictParts = grade.Verdict

// DiffOutput is the tool's result: the report's verdict and findings,
// what was checked, a hint, and where the full report is.
type DiffOutput struct {
	Verdict string `json:"verdict" jsonschema:"the verdict exactly as kavach diff prints it: fixed, held (a contract), diverged@N, still_failing@N, invariant_violated(NAME)@N, variant_failed(K)@N or unverified(REASON)"`
	VerdictParts
	ExitStatus   int             `json:"exit_status" jsonschema:"the status kavach diff exits with for this verdict: 0 fixed or held, 1 red, 3 unverified"`
	Report       string          `json:"report" jsonschema:"path of the full JSON report; kavach verdict REPORT re-derives the verdict from its evidence"`
	Findings     []grade.Finding `json:"findings" jsonschema:"what is wrong with the new build, headline first (concise: the headline only)"`
	MoreFindings int             `json:"more_findings,omitempty" jsonschema:"findings left out of a concise result: they are in the report"`
	Cut          bool            `json:"cut,omitempty" jsonschema:"long values or differences were cut from the finding: the report has them whole"`
	Checked      grade.Checked   `json:"checked" jsonschema:"what was checked"`
	Hint         string          `json:"hint,omitempty" jsonschema:"what the verdict means and what to do next"`
	// FixtureVerdicts are a suite's fixtures in order, each with its verdict.
	FixtureVerdicts []FixtureVerdict `json:"fixture_verdicts,omitempty" jsonschema:"for a suite (fixtures given): every fixture in order with its verdict; findings, checked and hint are then the headline fixture's"`
}

// FixtureVerdict is one fixture of a suite and its verdict.
type FixtureVerdict struct {
	Fixture string `json:"fixture" jsonschema:"the fixture's path"`
	Verdict string `json:"verdict" jsonschema:"its verdict, as kavach diff prints it"`
}

// schemas are the tool's input and output schemas, inferred from the
// types, with the command line's defaults and the choices of detail.
func schemas(def grading.Request) (in, out *jsonschema.Schema, err error) {
	in, err = jsonschema.For[DiffInput](nil)
	if err != nil {
		return nil, nil, err
	}
	for name, v := range map[string]any{
		"variants": def.Variants, "min_variants": def.MinVariants, "seed": def.Seed, "jobs": 0, "fail_fast": false, "below_floor": false,
		"step_timeout_ms": def.StepTimeout.Milliseconds(), "start_timeout_ms": def.StartTimeout.Milliseconds(), "detail": "concise",
	} {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, nil, err
		}
		in.Properties[name].Default = b
	}
	// The bounds are the tool's own (grading.Request.Check): counts from 0
	// (0 variants, 0 jobs: as many as the CPUs kavach may use), timeouts
	// from 1 ms.
	for name, min := range map[string]float64{"variants": 0, "min_variants": 0, "jobs": 0, "step_timeout_ms": 1, "start_timeout_ms": 1} {
		in.Properties[name].Minimum = new(min)
	}
	in.Properties["detail"].Enum = []any{"concise", "full"}
	out, err = jsonschema.For[DiffOutput](nil)
	if err != nil {
		return nil, nil, err
	}
	for name, desc := range map[string]string{
		"kind":      "the verdict's kind: fixed, diverged, still_failing, invariant_violated, variant_failed or unverified",
		"step":      "the step of the verdict's finding",
		"variant":   "for variant_failed: the variant, as the report numbers them (kavach variants --report REPORT lists them)",
		"invariant": "for invariant_violated: the invariant",
		"reason":    "for unverified: why the evidence is too thin",
	} {
		out.Properties[name].Description = desc
	}
	return in, out, nil
}

// diff is one call of the tool: it checks the input, grades as `kavach
// diff` does, writes the report, and shapes the result.
func (cfg Config) diff(ctx context.Context, req *mcp.CallToolRequest, in DiffInput) (*mcp.CallToolResult, DiffOutput, error) {
	if err := in.check(); err != nil {
		return nil, DiffOutput{}, err
	}
	r := grading.Request{
		Old: in.Old, New: in.New, Fixture: in.Fixture, Invariants: in.Invariants,
		Variants: in.Variants, MinVariants: in.MinVariants, Seed: in.Seed, Jobs: in.Jobs, FailFast: in.FailFast,
		NoCheckpoints: in.NoCheckpoints,
		StepTimeout:   time.Duration(in.StepTimeoutMS) * time.Millisecond,
		StartTimeout:  time.Duration(in.StartTimeoutMS) * time.Millisecond,
		Progress:      progress(ctx, req),
		BelowFloor:    in.BelowFloor,
		Memo:          cfg.memo,
		Warn:          cfg.Defaults.Warn,
	}
	if len(in.Fixtures) > 0 || isDir(in.Fixture) {
		r.Progress = suiteProgress(ctx, req)
		return cfg.diffSuite(ctx, in, r)
	}
	rep, err := grading.Grade(ctx, r)
	if err != nil {
		return nil, DiffOutput{}, gradeError(err)
	}
	path, err := writeReport(in.Out, rep)
	if err != nil {
		return nil, DiffOutput{}, err
	}
	a := []string{in.Old, in.New, in.Fixture}
	out := DiffOutput{
		Verdict: rep.Verdict, VerdictParts: rep.Parts, ExitStatus: grading.ExitStatus(rep.Parts.Kind),
		Report: path, Findings: rep.Findings, Checked: rep.Checked(), Hint: strings.ReplaceAll(textreport.Hint(rep, a, path), "\n", " "),
	}
	if out.Findings == nil {
		out.Findings = []grade.Finding{}
	}
	// The text is what `kavach diff` prints; a full result adds the
	// structured result as JSON, for clients that read only the text.
	var buf bytes.Buffer
	textreport.Diff(&buf, rep, a, path)
	return cfg.result(in, out, buf.String())
}

// gradeError says what to do about a grading that did not happen: options
// below the fixture's floor, or anything else (exit 2 on the command line).
func gradeError(err error) error {
	var below *grade.BelowFloorError
	if errors.As(err, &below) {
		return fmt.Errorf("%w (the floor was set with kavach mark): raise variants or min_variants, or use the "+
			"floor's seed, or leave them out for the defaults; below_floor: true grades anyway, but then the verdict is never fixed", err)
	}
	return fmt.Errorf("kavach could not grade (exit status 2 on the command line): %w", err)
}

// diffSuite is a call with several fixtures: kavach diff OLD NEW F1 F2 ...
func (cfg Config) diffSuite(ctx context.Context, in DiffInput, r grading.Request) (*mcp.CallToolResult, DiffOutput, error) {
	fixtures, _, err := grading.FixtureArgs(append([]string{in.Fixture}, in.Fixtures...))
	if err == nil {
		err = grading.CheckFixtures(fixtures)
	}
	if err != nil {
		return nil, DiffOutput{}, gradeError(err)
	}
	s, err := grading.GradeSuite(ctx, r, fixtures)
	if err != nil {
		return nil, DiffOutput{}, gradeError(err)
	}
	path, err := writeReport(in.Out, s)
	if err != nil {
		return nil, DiffOutput{}, err
	}
	out := DiffOutput{Verdict: s.Verdict, VerdictParts: s.Parts, ExitStatus: grading.ExitStatus(s.Parts.Kind), Report: path, Findings: []grade.Finding{}}
	for i, rep := range s.Reports {
		out.FixtureVerdicts = append(out.FixtureVerdicts, FixtureVerdict{Fixture: fixtures[i], Verdict: rep.Verdict})
	}
	if h := s.Headline; h >= 0 {
		rep := s.Reports[h]
		out.Findings, out.Checked = rep.Findings, rep.Checked()
		out.Hint = strings.ReplaceAll(textreport.Hint(rep, []string{in.Old, in.New, fixtures[h]}, path), "\n", " ")
		if out.Findings == nil {
			out.Findings = []grade.Finding{}
		}
	}
	var buf bytes.Buffer
	textreport.Suite(&buf, s, in.Old, in.New, fixtures, path)
	return cfg.result(in, out, buf.String())
}

// result shapes a call's result: the printed text, and with detail full
// the structured result as JSON too; concise cuts both.
func (cfg Config) result(in DiffInput, out DiffOutput, text string) (*mcp.CallToolResult, DiffOutput, error) {
	var content []mcp.Content
	if in.Detail == "full" {
		b, err := json.Marshal(out)
		if err != nil {
			return nil, DiffOutput{}, err
		}
		content = []mcp.Content{&mcp.TextContent{Text: text}, &mcp.TextContent{Text: string(b)}}
	} else {
		out.conciseFindings()
		content = []mcp.Content{&mcp.TextContent{Text: cutEachLine(text, lineMax, textreport.HintIndent)}}
	}
	return &mcp.CallToolResult{Content: content}, out, nil
}

// Limits of a concise result, which must stay within about 2,000 tokens.
const (
	lineMax    = 240 // bytes of a line of the printed verdict (a request, a log line)
	diffsMax   = 5   // differences of the headline finding
	valueMax   = 120 // bytes of a value in a difference
	requestMax = 200 // bytes of a request
	detailMax  = 600 // bytes of a detail (six lines)
)

// conciseFindings keeps the headline finding only, its long values cut.
func (o *DiffOutput) conciseFindings() {
	if len(o.Findings) == 0 {
		return
	}
	o.MoreFindings = len(o.Findings) - 1
	f := o.Findings[0]
	cutTo := func(s string, max int) string {
		c := cut.String(s, max)
		if c != s {
			o.Cut = true
		}
		return c
	}
	cutDetail := func(s string) string { return cutTo(cut.Lines(s, 6), detailMax) }
	f.Request = cutTo(f.Request, requestMax)
	f.Detail = cutDetail(f.Detail)
	f.Expected.Detail = cutDetail(f.Expected.Detail)
	f.Outcome.Detail = cutDetail(f.Outcome.Detail)
	if len(f.Diffs) > diffsMax {
		f.Diffs, o.Cut = f.Diffs[:diffsMax], true
	}
	f.Diffs = append(f.Diffs[:0:0], f.Diffs...)
	for i := range f.Diffs {
		f.Diffs[i].Want = cutTo(f.Diffs[i].Want, valueMax)
		f.Diffs[i].Got = cutTo(f.Diffs[i].Got, valueMax)
	}
	o.Findings = []grade.Finding{f}
}

// cutEachLine cuts the long lines of textreport.Diff's text: requests, values,
// log lines. The hint (its first line and the lines indented under it)
// and the report's line are kept whole: they hold the commands and the
// path an agent runs next, which a cut would break.
func cutEachLine(s string, max int, hintIndent string) string {
	lines := strings.Split(s, "\n")
	inHint := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "hint: "):
			inHint = true
			continue
		case inHint && strings.HasPrefix(l, hintIndent):
			continue
		case strings.HasPrefix(l, "report: "):
			continue
		}
		inHint = false
		lines[i] = cut.String(l, max)
	}
	return strings.Join(lines, "\n")
}

// writeReport writes a report to out, or to a new temporary file when
// out is "", and returns its path, as kavach diff does.
func writeReport(out string, rep any) (string, error) {
	path, err := grading.ReportPath(out)
	if err == nil {
		err = grading.WriteReport(path, rep)
	}
	return path, err
}

// isDir reports whether path is a directory: a fixture given as one is a
// suite of its .kavach files, as on the command line.
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// check says what to correct in a call, before any build is started.
func (in DiffInput) check() error {
	for _, p := range []struct{ name, path, what string }{
		{"old", in.Old, "the old build's executable, the one the incident was recorded on"},
		{"new", in.New, "the new build's executable, the candidate fix"},
		{"fixture", in.Fixture, "the incident's fixture file, written by kavach record (or a directory of fixtures)"},
		{"invariants", in.Invariants, "an invariants file, or leave it out to use the fixture's own"},
	} {
		if p.path == "" {
			if p.name == "invariants" {
				continue
			}
			return fmt.Errorf("%q is empty: give the path of %s", p.name, p.what)
		}
		st, err := os.Stat(p.path)
		switch {
		case err != nil && errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("%q: %s does not exist%s: give the path of %s", p.name, echo(p.path), pathcheck.RelativeTo(p.path), p.what)
		case err != nil:
			return fmt.Errorf("%q: %s: %v: give the path of %s", p.name, echo(p.path), pathErr(err), p.what)
		case st.IsDir() && p.name != "fixture":
			return fmt.Errorf("%q: %s is a directory: give the path of %s", p.name, echo(p.path), p.what)
		}
	}
	for i, f := range in.Fixtures {
		if f == "" {
			return fmt.Errorf("\"fixtures\"[%d] is empty: give the path of a fixture file, or of a directory of them", i)
		}
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("\"fixtures\"[%d]: %s: %v%s: give the path of a fixture file, or of a directory of them", i, echo(f), pathErr(err), pathcheck.RelativeTo(f))
		}
	}
	if in.Detail != "concise" && in.Detail != "full" {
		return fmt.Errorf("%q is %q: use \"concise\" (the headline finding, the default) or \"full\" (every finding)", "detail", echo(in.Detail))
	}
	if in.Out != "" {
		inputs := []pathcheck.Input{{What: "the old build", Path: in.Old}, {What: "the new build", Path: in.New},
			{What: "the fixture", Path: in.Fixture}, {What: "the invariants file", Path: in.Invariants}}
		for _, f := range in.Fixtures {
			inputs = append(inputs, pathcheck.Input{What: "a fixture", Path: f})
		}
		if err := pathcheck.Output(`"out"`, in.Out, pathcheck.Report, inputs...); err != nil {
			return fmt.Errorf("%w; or leave it out for a temporary file", err)
		}
	}
	return nil
}

// pathErr is what went wrong with a path, without the path (which the
// message quotes, cut, itself).
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// progress sends a progress notification each time a replay or a
// variant finishes, when the client gave a progress token. Progress only
// grows: the replays of the fixture come first, then the variants.
func progress(ctx context.Context, req *mcp.CallToolRequest) func(done, total int) {
	if req == nil || req.Session == nil || req.Params == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	var (
		mu     sync.Mutex
		phases grade.Phases
	)
	return func(_, total int) {
		mu.Lock()
		defer mu.Unlock()
		ph := phases.Next(total)
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: float64(ph.Overall), Total: float64(ph.OverallOf),
			Message: fmt.Sprintf("%s: %d of %d done", ph.Name, ph.Done, ph.Total),
		})
	}
}

// suiteProgress sends a progress notification each time a fixture of a
// suite is graded (the fixtures are graded at once), when the client gave
// a progress token.
func suiteProgress(ctx context.Context, req *mcp.CallToolRequest) func(done, total int) {
	if req == nil || req.Session == nil || req.Params == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	return func(done, total int) {
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: float64(done), Total: float64(total),
			Message: fmt.Sprintf("fixtures: %d of %d graded", done, total),
		})
	}
}
