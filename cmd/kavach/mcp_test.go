package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/internal/syncbuf"
	"github.com/kavach-dev/kavach/mcpserver"
)

// TestMCP starts `kavach mcp` as an agent's client would, with the SDK's
// own client over stdio, and grades real planted-fault builds of Redis
// against the GETRANGE incident through it.
func TestMCP(t *testing.T) {
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOld)...)
	strlen := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenBroken)...)
	pristine := redisbuild.MustBuild(t)
	dir := t.TempDir()
	fixture := filepath.Join(dir, "getrange.kavach")
	if err := incidents.RecordGetrange(fixture, old); err != nil {
		t.Fatal(err)
	}

	// testscript.Main (TestMain) put this test binary on PATH as "kavach":
	// run under that name, it is the kavach command, main() and all.
	bin, err := exec.LookPath("kavach")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp")
	cmd.Dir = dir
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr

	var progress progressLog
	client := mcp.NewClient(&mcp.Implementation{Name: "kavach-test", Version: "0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress.add(req.Params)
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := session.Close(); err != nil {
			t.Errorf("closing the session: %v", err)
		}
		if t.Failed() {
			t.Logf("kavach mcp's stderr:\n%s", stderr.String())
		}
	}()

	t.Run("list", func(t *testing.T) {
		res, err := session.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != 1 || res.Tools[0].Name != mcpserver.ToolName {
			t.Fatalf("tools: %+v, want the one tool %s", res.Tools, mcpserver.ToolName)
		}
		tool := res.Tools[0]
		var in struct {
			Properties map[string]struct {
				Default json.RawMessage `json:"default"`
				Enum    []any           `json:"enum"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		remarshal(t, tool.InputSchema, &in)
		if strings.Join(in.Required, " ") != "old new fixture" {
			t.Errorf("required inputs %v, want old new fixture", in.Required)
		}
		for name, def := range map[string]string{"variants": "64", "min_variants": "10", "seed": "1", "step_timeout_ms": "5000", "detail": `"concise"`} {
			if got := string(in.Properties[name].Default); got != def {
				t.Errorf("input %s: default %s, want %s (as kavach diff's flags)", name, got, def)
			}
		}
		if e := in.Properties["detail"].Enum; len(e) != 2 {
			t.Errorf("detail: enum %v, want concise and full", e)
		}
		var out struct {
			Properties map[string]any `json:"properties"`
		}
		remarshal(t, tool.OutputSchema, &out)
		for _, name := range []string{"verdict", "kind", "step", "exit_status", "report", "findings", "checked", "hint"} {
			if out.Properties[name] == nil {
				t.Errorf("output schema has no %s", name)
			}
		}
	})

	t.Run("diverged", func(t *testing.T) {
		report := filepath.Join(dir, "diverged.json")
		res, out := callDiff(t, ctx, session, "diverged", map[string]any{"old": old, "new": strlen, "fixture": fixture, "out": report})
		if out.Verdict != "diverged@3" || out.Kind != grade.Diverged || out.Step != 3 || out.ExitStatus != 1 {
			t.Errorf("verdict %s (kind %s, step %d, exit status %d), want diverged@3, step 3, exit status 1",
				out.Verdict, out.Kind, out.Step, out.ExitStatus)
		}
		if len(out.Findings) != 1 {
			t.Fatalf("concise result: %d findings, want the headline only", len(out.Findings))
		}
		f := out.Findings[0]
		if f.Kind != grade.Diverged || f.Step != 3 || f.Request != `STRLEN "greeting"` || len(f.Diffs) != 1 ||
			f.Diffs[0].Path != "reply[0]" || f.Diffs[0].Want != "12" || f.Diffs[0].Got != "11" {
			t.Errorf("headline finding %+v, want step 3, STRLEN \"greeting\", reply[0] 12 → 11", f)
		}
		if !strings.Contains(out.Hint, "kavach show "+fixture+" --step 3") {
			t.Errorf("hint %q does not say how to see the step", out.Hint)
		}
		if c := out.Checked; c.StepsCompared != 4 || c.FailureStep != 5 || c.OldOutcome != "crash" || c.MinVariants != 10 {
			t.Errorf("checked %+v, want 4 steps compared, failure at 5, old build crash, 10 variants needed", c)
		}
		if out.Report != report {
			t.Errorf("report %s, want %s", out.Report, report)
		}
		// The text is what `kavach diff` prints; the whole result stays
		// within about 2,000 tokens.
		if text := res.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(text, "diverged@3\n") || !strings.Contains(text, "  - 12   (recorded)\n  + 11   (new build)") {
			t.Errorf("text content:\n%s\nwant kavach diff's output", text)
		}
		if b, _ := json.Marshal(res); len(b) > 8000 {
			t.Errorf("concise result is %d bytes, want at most 8000 (about 2,000 tokens):\n%s", len(b), b)
		}
		// The report is the one the command line writes: its verdict
		// re-derives from its evidence, and it holds every finding.
		var stdout, errb bytes.Buffer
		if code := run(ctx, []string{"kavach", "verdict", report}, nil, &stdout, &errb); code != 0 || stdout.String() != "agrees: diverged@3\n" {
			t.Errorf("kavach verdict %s: exit %d: %s%s", report, code, stdout.String(), errb.String())
		}
		rep := readReport(t, report)
		if out.MoreFindings != len(rep.Findings)-1 {
			t.Errorf("more_findings %d, the report has %d findings", out.MoreFindings, len(rep.Findings))
		}
		// Progress: replays, then variants, always growing.
		ps := progress.take("diverged")
		if len(ps) < 3 {
			t.Fatalf("%d progress notifications, want one per replay at least: %+v", len(ps), ps)
		}
		for i, p := range ps {
			if p.Progress != float64(i+1) || p.Total < p.Progress || p.Message == "" {
				t.Errorf("progress notification %d: %+v", i, p)
			}
		}
	})

	t.Run("another attempt", func(t *testing.T) {
		// An agent's next attempt, with the same old build and fixture:
		// the variants' old replays are the server's from the call before
		// (grade.Memo), and the verdict is the new build's.
		report := filepath.Join(dir, "again.json")
		_, out := callDiff(t, ctx, session, "", map[string]any{"old": old, "new": pristine, "fixture": fixture, "out": report})
		if out.Verdict != "fixed" {
			t.Fatalf("verdict %s, want fixed", out.Verdict)
		}
		rep := readReport(t, report)
		n, fresh := 0, 0
		for _, v := range rep.Evidence.Variants.List {
			switch {
			case v.Remembered:
				n++
			case v.Kind == "upgrade":
				fresh++ // it starts from a state saved in its own call
			}
		}
		if list := rep.Evidence.Variants.List; n == 0 || n+fresh != len(list) || fresh != 1 {
			t.Errorf("%d of %d variants' old replays taken from the call before, want all but the upgrade one (%d)", n, len(list), fresh)
		}
	})

	t.Run("suite", func(t *testing.T) {
		// The incident and a contract around it, recorded on the old
		// build; the candidate fixes GETRANGE and breaks negative INCRBY.
		counter := filepath.Join(dir, "counter.kavach")
		if err := incidents.RecordSession(counter, old, counterSession); err != nil {
			t.Fatal(err)
		}
		incrby := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.IncrbyOld)...)
		report := filepath.Join(dir, "suite.json")
		res, out := callDiff(t, ctx, session, "", map[string]any{"old": old, "new": incrby, "fixture": fixture, "fixtures": []string{counter}, "out": report})
		want := []mcpserver.FixtureVerdict{{Fixture: fixture, Verdict: "fixed"}, {Fixture: counter, Verdict: "diverged@2"}}
		if out.Verdict != "diverged@2" || out.ExitStatus != 1 || len(out.FixtureVerdicts) != 2 || out.FixtureVerdicts[0] != want[0] || out.FixtureVerdicts[1] != want[1] {
			t.Errorf("suite: verdict %s (exit %d), fixtures %+v; want diverged@2 (exit 1), %+v", out.Verdict, out.ExitStatus, out.FixtureVerdicts, want)
		}
		if len(out.Findings) != 1 || out.Findings[0].Request != `INCRBY "counter" "-3"` || !out.Checked.Contract {
			t.Errorf("suite: findings %+v, checked %+v; want the contract's step 2", out.Findings, out.Checked)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(text, "diverged@2\nfixed       "+fixture+"\ndiverged@2  "+counter+"\n") {
			t.Errorf("text content:\n%s\nwant the suite's lines", text)
		}
		var stdout, errb bytes.Buffer
		if code := run(ctx, []string{"kavach", "verdict", report}, nil, &stdout, &errb); code != 0 || !strings.HasPrefix(stdout.String(), "agrees: diverged@2 (the suite)\n") {
			t.Errorf("kavach verdict %s: exit %d: %s%s", report, code, stdout.String(), errb.String())
		}
	})

	t.Run("fixture directory", func(t *testing.T) {
		// "fixture" may be a directory, as kavach diff OLD NEW DIR/ takes
		// one: a suite of its .kavach files, in name order.
		fixtureDir := filepath.Join(dir, "suite")
		if err := os.MkdirAll(fixtureDir, 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(fixture)
		if err != nil {
			t.Fatal(err)
		}
		one := filepath.Join(fixtureDir, "a-getrange.kavach")
		if err := os.WriteFile(one, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, out := callDiff(t, ctx, session, "", map[string]any{"old": old, "new": pristine, "fixture": fixtureDir,
			"variants": 0, "min_variants": 0, "out": filepath.Join(dir, "dir-suite.json")})
		want := mcpserver.FixtureVerdict{Fixture: one, Verdict: "fixed"}
		if out.Verdict != "fixed" || out.ExitStatus != 0 || len(out.FixtureVerdicts) != 1 || out.FixtureVerdicts[0] != want {
			t.Errorf("fixture %s: verdict %s (exit %d), fixtures %+v; want fixed (exit 0), %+v", fixtureDir, out.Verdict, out.ExitStatus, out.FixtureVerdicts, want)
		}
	})

	t.Run("long paths are not cut", func(t *testing.T) {
		// The concise text cuts long lines, but never the command the hint
		// says to run next, nor the report's path.
		long := filepath.Join(dir, strings.Repeat("incident-", 12), strings.Repeat("incident-", 12))
		if err := os.MkdirAll(long, 0o755); err != nil {
			t.Fatal(err)
		}
		fx := filepath.Join(long, "getrange.kavach")
		b, err := os.ReadFile(fixture)
		if err == nil {
			err = os.WriteFile(fx, b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		report := filepath.Join(long, "report.json")
		res, _ := callDiff(t, ctx, session, "", map[string]any{"old": old, "new": strlen, "fixture": fx, "out": report, "variants": 0})
		text := res.Content[0].(*mcp.TextContent).Text
		for _, want := range []string{"kavach show " + fx + " --step 3\n", "report: " + report + "\n"} {
			if !strings.Contains(text, want) {
				t.Errorf("text does not hold %q whole:\n%s", want, text)
			}
		}
	})

	t.Run("diverged full", func(t *testing.T) {
		_, out := callDiff(t, ctx, session, "", map[string]any{"old": old, "new": strlen, "fixture": fixture, "detail": "full", "variants": 8, "min_variants": 1})
		if out.Verdict != "diverged@3" || len(out.Findings) < 2 || out.MoreFindings != 0 {
			t.Errorf("full result: verdict %s, %d findings (%d more), want diverged@3 with every finding", out.Verdict, len(out.Findings), out.MoreFindings)
		}
		if _, err := os.Stat(out.Report); err != nil {
			t.Errorf("report: %v", err)
		}
		os.Remove(out.Report)
	})

	t.Run("still failing", func(t *testing.T) {
		res, out := callDiff(t, ctx, session, "", map[string]any{"old": old, "new": old, "fixture": fixture, "variants": 0})
		if out.Verdict != "still_failing@5" || out.ExitStatus != 1 || len(out.Findings) != 1 || out.Findings[0].Outcome.Kind != "crash" {
			t.Errorf("verdict %s, exit status %d, findings %+v; want still_failing@5, 1, a crash", out.Verdict, out.ExitStatus, out.Findings)
		}
		if !strings.Contains(out.Hint, "kavach replay "+old+" "+fixture) {
			t.Errorf("hint %q does not say how to reproduce it", out.Hint)
		}
		if b, _ := json.Marshal(res); len(b) > 8000 {
			t.Errorf("concise result is %d bytes, want at most 8000 (about 2,000 tokens):\n%s", len(b), b)
		}
		os.Remove(out.Report)
	})

	t.Run("fixed", func(t *testing.T) {
		_, out := callDiff(t, ctx, session, "", map[string]any{"old": old, "new": pristine, "fixture": fixture})
		if out.Verdict != "fixed" || out.ExitStatus != 0 || len(out.Findings) != 0 {
			t.Errorf("verdict %s, exit status %d, findings %+v; want fixed, 0, none (report: %s)", out.Verdict, out.ExitStatus, out.Findings, out.Report)
			return
		}
		if c := out.Checked; c.VariantsReproduce < c.MinVariants || c.NewOutcome != "ok" {
			t.Errorf("checked %+v, want at least %d reproducing variants and the new build ok at the failure", c, c.MinVariants)
		}
		os.Remove(out.Report)
	})

	t.Run("floor", func(t *testing.T) {
		// A fixture with a floor: weaker options are refused, unless
		// below_floor, and then a passing fix is unverified, not fixed.
		fx := filepath.Join(dir, "floored.kavach")
		b, err := os.ReadFile(fixture)
		if err == nil {
			err = os.WriteFile(fx, b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		if code := run(ctx, []string{"kavach", "mark", fx, "--floor-min-variants", "10", "--floor-variants", "64"}, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("kavach mark: exit %d: %s", code, stderr.String())
		}
		weak := map[string]any{"old": old, "new": pristine, "fixture": fx, "variants": 8, "min_variants": 1}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: weak})
		if err != nil || !res.IsError {
			t.Fatalf("below the floor: %v %+v, want a tool error", err, res)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "below the fixture's floor: min_variants 1 < 10, variants 8 < 64") ||
			!strings.Contains(text, "below_floor: true") {
			t.Errorf("refusal %q does not say what is below the floor and how to grade anyway", text)
		}
		weak["below_floor"] = true
		_, out := callDiff(t, ctx, session, "", weak)
		if out.Verdict != "unverified(below-floor: min_variants 1 < 10; variants 8 < 64)" || out.ExitStatus != 3 {
			t.Errorf("below_floor: verdict %s, exit status %d; want unverified(below-floor: ...), 3", out.Verdict, out.ExitStatus)
		}
		os.Remove(out.Report)
	})

	t.Run("bad input", func(t *testing.T) {
		notes := filepath.Join(dir, "notes.txt")
		if err := os.WriteFile(notes, []byte("not a fixture\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			args map[string]any
			want []string
		}{
			{"missing fixture", map[string]any{"old": old, "new": pristine},
				[]string{`missing properties: ["fixture"]`, `Call kavach_diff with {"old": "PATH", "new": "PATH", "fixture": "PATH"}`}},
			{"no such fixture", map[string]any{"old": old, "new": pristine, "fixture": "missing.kavach"},
				[]string{`"fixture": missing.kavach does not exist (relative paths are taken from kavach's working directory, ` + dir + `)`,
					"give the path of the incident's fixture file"}},
			{"no such build", map[string]any{"old": old, "new": filepath.Join(dir, "redis-new"), "fixture": fixture},
				[]string{`"new": ` + dir + `/redis-new does not exist`, "the new build's executable"}},
			{"bad detail", map[string]any{"old": old, "new": pristine, "fixture": fixture, "detail": "verbose"},
				[]string{"detail", "concise", "full"}},
			{"unknown field", map[string]any{"old": old, "new": pristine, "fixure": fixture},
				[]string{`"fixure"`, "Call kavach_diff with"}},
			{"not a fixture", map[string]any{"old": old, "new": pristine, "fixture": notes},
				[]string{"kavach could not grade", "notes.txt"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: tc.args})
				if err != nil {
					t.Fatalf("a bad call must be a tool error, not a protocol error: %v", err)
				}
				if !res.IsError || len(res.Content) == 0 {
					t.Fatalf("result %+v, want a tool error", res)
				}
				text := res.Content[0].(*mcp.TextContent).Text
				t.Logf("%s", text)
				for _, w := range tc.want {
					if !strings.Contains(text, w) {
						t.Errorf("error %q does not say %q", text, w)
					}
				}
			})
		}
	})
}

// callDiff calls the tool, with a progress token when token is not "",
// and returns the result and its structured output.
// readReport is the JSON report at path.
func readReport(t *testing.T, path string) *grade.Report {
	t.Helper()
	var rep grade.Report
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &rep
}

func callDiff(t *testing.T, ctx context.Context, s *mcp.ClientSession, token string, args map[string]any) (*mcp.CallToolResult, mcpserver.DiffOutput) {
	t.Helper()
	params := &mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: args}
	if token != "" {
		params.SetProgressToken(token)
	}
	res, err := s.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("tool error: %v", res.Content[0].(*mcp.TextContent).Text)
	}
	var out mcpserver.DiffOutput
	remarshal(t, res.StructuredContent, &out)
	return res, out
}

func remarshal(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err == nil {
		err = json.Unmarshal(b, to)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// progressLog collects progress notifications by token.
type progressLog struct {
	mu sync.Mutex
	by map[any][]*mcp.ProgressNotificationParams
}

func (l *progressLog) add(p *mcp.ProgressNotificationParams) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[any][]*mcp.ProgressNotificationParams{}
	}
	l.by[p.ProgressToken] = append(l.by[p.ProgressToken], p)
}

func (l *progressLog) take(token any) []*mcp.ProgressNotificationParams {
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := l.by[token]
	delete(l.by, token)
	return ps
}

// TestMCPCommandLine: `kavach mcp` has help with an example, and takes no
// arguments.
func TestMCPCommandLine(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"kavach", "mcp", "--help"}, nil, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "Example:") || !strings.Contains(stdout.String(), `"args": ["mcp"]`) {
		t.Errorf("kavach mcp --help: exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), []string{"kavach", "mcp", "extra"}, nil, &stdout, &stderr); code != exitCannot ||
		!strings.Contains(stderr.String(), "takes 0 argument") {
		t.Errorf("kavach mcp extra: exit %d, stderr %q; want exit 2 and a usage error", code, stderr.String())
	}
}

// verifierScript is the absolute path of the harness verifier template,
// examples/verifier/verify.sh, which scripts run as $VERIFIER.
func verifierScript(t testing.TB) string {
	path, err := filepath.Abs(filepath.Join("..", "..", "examples", "verifier", "verify.sh"))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// harborTestScript is the absolute path of the Harbor task template's
// verifier, examples/harbor-task/tests/test.sh, which scripts run as
// $HARBOR_TEST.
func harborTestScript(t testing.TB) string {
	path, err := filepath.Abs(filepath.Join("..", "..", "examples", "harbor-task", "tests", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	return path
}
