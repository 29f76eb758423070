package htmlreport_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/htmlreport"
	"github.com/kavach-dev/kavach/recount"
	"github.com/kavach-dev/kavach/replay"
)

var update = flag.Bool("update", false, "rewrite the golden pages in testdata")

// goldens are the reports rendered to golden pages, each written by a
// real `kavach diff` (TestRegenerateReports), and why each is here.
var goldens = []struct {
	name, why string
	verdict   string
	failure   int // the failing step whose mark the page must hold (0: a suite's first fixture's)
}{
	{"fixed", "the fix: no finding, and the failing step's recorded, old and new answers side by side all the same", "fixed", 5},
	{"diverged", "a fault planted before the failure: the finding's step differs from the recording, with its answers side by side", "diverged@3", 5},
	{"variant_failed", "a fix too narrow: the finding is a variant, compared with the old build's replay of it; the variants table has every outcome", "variant_failed(11)@6", 5},
	{"suite", "a suite: the headline over a fixed incident and a broken contract (no failing step), one section each", "diverged@2", 5},
	{"diverged_after", "a wrong answer moved after the failure: diverged there, an invariant violated (a second finding), noise fields", "diverged@8", 6},
}

func render(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := htmlreport.Decode(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var buf bytes.Buffer
	if err := doc.Render(&buf); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return buf.Bytes()
}

func TestGolden(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			got := render(t, g.name)
			path := filepath.Join("testdata", g.name+".html")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s (%s): the page differs from %s; run with -update if the change is meant\n%s", g.name, g.why, path, firstDifference(got, want))
			}
			checkPage(t, string(got), g.verdict, g.failure)
		})
	}
}

// firstDifference shows the first line where two pages differ.
func firstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n got: %.300s\nwant: %.300s", i+1, a, b)
		}
	}
	return ""
}

// checkPage holds what every page must be, whatever its golden says:
// self-contained (nothing fetched, no script), the verdict in its heading,
// the failing step marked, and the sections in the order.
func checkPage(t *testing.T, page, verdict string, failure int) {
	t.Helper()
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "@import", "url(", " src="} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q: it must fetch nothing and run nothing", bad)
		}
	}
	for _, u := range regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^\s"<]*`).FindAllString(page, -1) {
		if u != "http://www.w3.org/2000/svg" {
			t.Errorf("the page names an address, %q: it must fetch nothing", u)
		}
	}
	if !strings.Contains(page, `<h1 id="verdict">`+html.EscapeString(verdict)+`</h1>`) {
		t.Errorf("the page's heading is not the verdict %s", verdict)
	}
	if failure > 0 && !strings.Contains(page, fmt.Sprintf(`id="s0-failure" class="failure" data-step="%d"`, failure)) {
		t.Errorf("the page does not mark the failing step %d", failure)
	}
	last := -1
	for _, h := range []string{`<h1 id="verdict">`, "<h3>Timeline</h3>", "<h3>Finding</h3>", "<h3>Variants</h3>", "<h3>Invariants</h3>", "<h3>Builds, fixture and options</h3>"} {
		i := strings.Index(page, h)
		if i < 0 || i < last {
			t.Errorf("section %s is missing or out of order", h)
		}
		last = i
	}
}

// TestFindingSideBySide: a diverged step's page shows the recording's
// answer and the new build's with the difference highlighted, and the
// difference's row names both values.
func TestFindingSideBySide(t *testing.T) {
	page := string(render(t, "diverged"))
	for _, want := range []string{
		`<span class="ln diff" title="differs from the recording: reply[0]">reply[0] 12</span>`,
		`<span class="ln diff" title="differs from the recording: reply[0]">reply[0] 11</span>`,
		`<tr class="diff"><td><code>reply[0]</code></td><td><code>12</code></td><td><code>12 (as recorded)</code></td><td><code>11</code></td>`,
		`<code>STRLEN &#34;greeting&#34;</code>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the diverged page lacks %s", want)
		}
	}
}

// TestFailingStepSideBySide: a fixed page shows the failing step's
// recorded, old and new answers side by side (the new build's answer from
// the report's evidence), the old build's crash log with its lines; a
// page whose finding is at the failing step shows it once, as the finding.
func TestFailingStepSideBySide(t *testing.T) {
	rep := smallReport(6, 5)
	rep.Evidence.Old.Steps[4].Outcome.Detail = "the build exited: killed by SIGABRT\n=== ASSERTION FAILED ===\n==> t_string.c:531 'start >= 0' is not true"
	rep.Evidence.New.Steps[4].Output = []any{"hello world!"}
	rep.Evidence.New.Steps[4].Diffs = []replay.Diff{diff(5, "reply[0]", "(missing)", `"hello world!"`)}
	var buf bytes.Buffer
	if err := htmlreport.Report(&buf, rep); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	sec := between(t, page, `<section class="failing">`, "</section>")
	for _, want := range []string{
		"step 5, where the old build failed (crash)",
		`<code>GET k5</code>`,
		`<h4>recording <span class="outcome crash">crash</span></h4>`,
		`<h4>old build <span class="outcome crash">crash</span></h4>`,
		"<pre class=\"log\">the build exited: killed by SIGABRT\n=== ASSERTION FAILED ===\n==&gt; t_string.c:531",
		`<h4>new build <span class="outcome ok">ok</span></h4>`,
		`reply[0] &#34;hello world!&#34;</span>`,
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("the failing step's section lacks %s\n%s", want, sec)
		}
	}
	// still_failing at the failing step: the finding shows the step, and
	// no second section repeats it.
	rep.Verdict, rep.Parts = "still_failing@5", grade.Verdict{Kind: grade.StillFailing, Step: 5}
	rep.Findings = []grade.Finding{{Verdict: rep.Parts, Request: "GET k5", Outcome: kavach.Outcome{Kind: kavach.Crash}}}
	buf.Reset()
	if err := htmlreport.Report(&buf, rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `<section class="failing">`) {
		t.Error("still_failing at the failing step: the failing step is shown twice")
	}
	// Every golden page shows the failing step's three answers, in the
	// finding or in a section of its own.
	for _, g := range goldens {
		page := string(render(t, g.name))
		if n := strings.Count(page, `<h4>recording <span`); n == 0 {
			t.Errorf("%s: no step's recorded, old and new answers side by side", g.name)
		}
		if !strings.Contains(page, `<section class="failing">`) && !strings.Contains(page, fmt.Sprintf("@%d</p>", g.failure)) {
			t.Errorf("%s: the failing step %d is shown neither by the finding nor on its own", g.name, g.failure)
		}
	}
}

// TestStepsTable: every step listed with its request, recorded, old and
// new answers and a status; the differing ones carry the class the
// checkbox filters on; a long recording's table is bounded, the
// differing steps kept.
func TestStepsTable(t *testing.T) {
	rep := smallReport(8, 5)
	rep.Evidence.New.Steps[1].Output = []any{"v2"}
	rep.Evidence.New.Steps[2].Output, rep.Evidence.New.Steps[2].RecordedOutput = []any{11.0}, []any{12.0}
	rep.Evidence.New.Steps[2].Diffs = []replay.Diff{diff(3, "reply[0]", "12", "11")}
	rep.Evidence.New.Steps[3].Diffs = []replay.Diff{diff(4, "reply[0][1]", `"a"`, `"b"`)}
	rep.Evidence.Noise = []replay.NoiseField{noiseField(4, "reply[0][1]")}
	rep.Evidence.New.Steps[5].Diffs = []replay.Diff{diff(6, "reply[0]", "1", "2")}
	rep.Evidence.New.Steps[6].Diffs = []replay.Diff{diff(7, "reply[0]", "1", "2")}
	rep.Evidence.New.Steps[7].Ran = false
	rep.Verdict, rep.Parts = "diverged@3", grade.Verdict{Kind: grade.Diverged, Step: 3}
	rep.Findings = []grade.Finding{{Verdict: rep.Parts, Request: "GET k3"}, {Verdict: grade.Verdict{Kind: grade.Diverged, Step: 7}, Request: "GET k7"}}
	var buf bytes.Buffer
	if err := htmlreport.Report(&buf, rep); err != nil {
		t.Fatal(err)
	}
	table := between(t, buf.String(), `<table class="st">`, "</table>")
	for _, want := range []string{
		`<tr class="same"><td>2</td><td><code>GET k2</code></td><td><code>ok: [&#34;v2&#34;]</code></td><td>ok, as recorded</td><td><code>ok: [&#34;v2&#34;]</code></td><td>as recorded</td></tr>`,
		`<tr class="differs d"><td>3</td><td><code>GET k3</code></td><td><code>ok: [12]</code></td><td>ok, as recorded</td><td><code>ok: [11]</code></td><td>differs from the recording</td></tr>`,
		`<tr class="noise"><td>4</td><td><code>GET k4</code></td><td><code>ok</code></td><td>ok, as recorded but for noise</td><td><code>ok</code></td><td>as recorded, but for noise</td></tr>`,
		`<tr class="failure d"><td>5</td><td><code>GET k5</code></td><td><code>crash</code></td><td>crash</td><td><code>ok</code></td><td>the failing step: answered otherwise</td></tr>`,
		`<tr class="after d"><td>6</td>`, "<td>differs after the failure (the fix may change it)</td>",
		`<tr class="differs d"><td>7</td>`, "<td>differs after the failure, not explained by the fix</td>",
		`<tr class="notrun"><td>8</td><td><code>GET k8</code></td><td><code>ok</code></td><td>ok</td><td><code>not run</code></td><td>not run</td></tr>`,
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the steps table lacks %s\n%s", want, table)
		}
	}
	if !strings.Contains(buf.String(), `<label for="s0-steps-differ">only the 4 that differ</label>`) {
		t.Error("the checkbox does not say how many steps differ")
	}

	// 5,000 steps, the last 1,500 differing: the table keeps 1,000 rows,
	// all of them differing, and says what it left out.
	rep = smallReport(5000, 3000)
	for i := 3500; i < 5000; i++ {
		rep.Evidence.New.Steps[i].Diffs = []replay.Diff{diff(i+1, "reply[0]", "1", "2")}
	}
	buf.Reset()
	if err := htmlreport.Report(&buf, rep); err != nil {
		t.Fatal(err)
	}
	table = between(t, buf.String(), `<table class="st">`, "</table>")
	if rows, differ := strings.Count(table, "<tr class="), strings.Count(table, ` d"><td>`); rows != 1000 || differ != 1000 {
		t.Errorf("a table of %d rows, %d differing: want 1000, all differing", rows, differ)
	}
	if !strings.Contains(buf.String(), "4000 more steps are left out of this table") {
		t.Error("the table does not say how many steps it leaves out")
	}
}

// TestKeptVariantOldOutcome: a kept variant's row shows the old outcome
// that kept it (the crash, at its step), also when the new build fails
// it by a difference at an earlier step, where the old build answered.
func TestKeptVariantOldOutcome(t *testing.T) {
	for _, name := range []string{"diverged", "variant_failed"} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := htmlreport.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		page := html.UnescapeString(string(render(t, name)))
		n := 0
		for _, v := range doc.Report.Evidence.Variants.List {
			if !v.Kept || v.Regression || v.FailedStep == 0 || len(v.Diffs) == 0 {
				continue
			}
			n++
			row := fmt.Sprintf(`<tr class="failed"><td>%d</td><td>%s</td><td>%s</td><td>crash @%d</td>`, v.K, v.Description, v.Kind, v.OldStep)
			if !strings.Contains(page, row) {
				t.Errorf("%s: variant %d, kept by a crash at step %d and failed by a difference at %d: its row is not %s", name, v.K, v.OldStep, v.FailedStep, row)
			}
		}
		if name == "diverged" && n == 0 {
			t.Errorf("%s: no kept variant failed by a difference: the test checks nothing", name)
		}
	}
}

// between is the part of s from the first from to the next to after it.
func between(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	if i < 0 {
		t.Fatalf("the page has no %s", from)
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		t.Fatalf("the page's %s is not closed by %s", from, to)
	}
	return s[i : i+j]
}

// TestNoiseGreyed: a noise field of the finding's step is greyed, with its
// reason, in the answers and in the differences.
func TestNoiseGreyed(t *testing.T) {
	rep := smallReport(3, 2)
	rep.Evidence.Noise = append(rep.Evidence.Noise, noiseField(2, "reply[0][1]"))
	rep.Evidence.New.Steps[1].Diffs = append(rep.Evidence.New.Steps[1].Diffs, diff(2, "reply[0][1]", `"a"`, `"b"`), diff(2, "reply[0][0]", "1", "2"))
	rep.Evidence.New.Steps[1].Output = []any{[]any{2.0, "b"}}
	rep.Evidence.New.Steps[1].RecordedOutput = []any{[]any{1.0, "a"}}
	rep.Findings = []grade.Finding{{Verdict: grade.Verdict{Kind: grade.Diverged, Step: 2}, Request: "GET k"}}
	rep.Verdict = "diverged@2"
	var buf bytes.Buffer
	if err := htmlreport.Report(&buf, rep); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		`<span class="ln noise" title="noise: differed between the recording and the old build&#39;s own replays (in 2 of 2); values seen: &#34;a&#34;, &#34;c&#34;; left out of every comparison"><span class="ind" style="--d:1"></span>&#34;b&#34;</span>`,
		`<span class="ln diff" title="differs from the recording: reply[0][0]"><span class="ind" style="--d:1"></span>2</span>`,
		`<tr class="noise"><td><code>reply[0][1]</code></td><td><code>&#34;a&#34;</code></td><td><code>&#34;c&#34;</code></td><td><code>&#34;b&#34;</code></td><td>noise:`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s\n", want)
		}
	}
}

// TestLargeFixture: a fixture of 100,000 steps gives a page well under
// 5 MB, its marks aggregated, its clock jumps drawn, and its failing step
// still marked.
func TestLargeFixture(t *testing.T) {
	rep := smallReport(100_000, 99_000)
	var buf bytes.Buffer
	if err := htmlreport.Report(&buf, rep); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if buf.Len() > 5<<20 {
		t.Errorf("the page is %d bytes: want under 5 MB", buf.Len())
	}
	if n := strings.Count(page, "<rect class=\"m "); n > 3*12*430 {
		t.Errorf("%d marks for 100,000 steps: want them aggregated to at most one per 2 px, lane and row", n)
	}
	if !strings.Contains(page, "each mark stands for the steps within 2 px") {
		t.Errorf("the caption does not say the marks are aggregated")
	}
	// smallReport puts a gap of 90 s after every 10,000th step.
	if n := strings.Count(page, `<text class="jump"`); n != 9 {
		t.Errorf("%d clock jumps drawn, want 9", n)
	}
	if !strings.Contains(page, `1m30s</text>`) {
		t.Errorf("a clock jump is not labelled with its length")
	}
	if !strings.Contains(page, `id="s0-failure" class="failure" data-step="99000"`) {
		t.Errorf("the failing step is not marked")
	}
	// 24 connections: the 11 busiest apart, the 13 others in one lane.
	if !strings.Contains(page, `>conn 2</text>`) || !strings.Contains(page, `>13 other conns</text>`) {
		t.Errorf("the lanes are not labelled by connection")
	}
}

// TestOldReportWithoutTimes: a report written before steps had times
// spaces them evenly, in order, and says so.
func TestOldReportWithoutTimes(t *testing.T) {
	rep := smallReport(5, 3)
	for i := range rep.Evidence.New.Steps {
		rep.Evidence.New.Steps[i].AtUS, rep.Evidence.New.Steps[i].Conn = 0, 0
	}
	var buf bytes.Buffer
	if err := htmlreport.Report(&buf, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "in order (this report gives no step times)") || !strings.Contains(buf.String(), ">step 1</text>") {
		t.Errorf("a report without step times does not say its timeline is by order")
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not JSON", "{", "not a kavach diff report"},
		{"another JSON", `{"hello": 1}`, "no schema_version and evidence"},
		{"a future schema", `{"schema_version": 9, "verdict": "fixed", "evidence": {}}`, "schema version 9, this Kavach reads 1"},
		{"a suite with a hole", `{"schema_version": 1, "suite": true, "reports": [null]}`, "fixture 1 has no report"},
		{"a broken shape", `{"schema_version": 1, "verdict": "fixed", "evidence": {"new": {"steps": 3}}}`, "not a kavach diff report"},
	} {
		if _, err := htmlreport.Decode([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestWriteFileWholeOrNothing: a page that cannot be rendered, or written,
// leaves no file (and no temporary one) behind, and an earlier page as it was.
func TestWriteFileWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "page.html")
	if err := os.WriteFile(out, []byte("earlier"), 0o644); err != nil {
		t.Fatal(err)
	}
	failing := func(w io.Writer) error {
		io.WriteString(w, "<!DOCTYPE html><p>half a page")
		return errors.New("render page: boom")
	}
	if err := htmlreport.WriteFile(out, failing); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("a failed render: error %v, want it passed on", err)
	}
	if err := htmlreport.WriteFile(filepath.Join(dir, "nosuch", "page.html"), func(w io.Writer) error { return nil }); err == nil {
		t.Errorf("a page in a missing directory: no error")
	}
	if b, _ := os.ReadFile(out); string(b) != "earlier" {
		t.Errorf("the earlier page is now %q", b)
	}
	if err := htmlreport.WriteFile(out, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "new" {
		t.Errorf("the page is %q, want it rewritten", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %d files, want the page alone", len(entries))
	}
}

// TestJobPage: a harness job's page holds the counts, the reports against
// their evidence and the two graders by task.
func TestJobPage(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "diverged.json"))
	if err != nil {
		t.Fatal(err)
	}
	for trial, reward := range map[string]string{"getrange__a1": "1", "getrange__b2": "0"} {
		d := filepath.Join(dir, trial, "verifier")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "report.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "reward.txt"), []byte(reward), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	job, err := recount.Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := htmlreport.Job(&buf, job, map[string]int{"diverged": 1}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		"<h3>Two graders, by task</h3>",
		`<tr class="diff"><td>getrange</td><td>2</td><td>1</td><td>0</td><td>1</td><td>getrange__a1</td><td></td></tr>`,
		`<td class="v red">MISMATCH: the summary says 1</td>`,
		"2 reports consistent, 0 inconsistent.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the job's page lacks %s", want)
		}
	}
	checkSelfContained(t, page)
}

func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, bad := range []string{"<script", "<link", "<img", "url(", " src="} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
}

// FuzzDecodeRender: whatever a report file holds, reading it and drawing
// its page gives a page or an error, never a panic.
func FuzzDecodeRender(f *testing.F) {
	// The golden reports, cut to one variant, finding, noise field and
	// invariant, three steps (and a suite to one fixture): seeds of a few
	// kilobytes at most. On inputs of tens of kilobytes the fuzzer ran ten
	// inputs in 30 s (minimizing each interesting one takes long); on these
	// it runs thousands a second.
	for _, g := range goldens {
		b, err := os.ReadFile(filepath.Join("testdata", g.name+".json"))
		if err != nil {
			f.Fatal(err)
		}
		doc, err := htmlreport.Decode(b)
		if err != nil {
			f.Fatal(err)
		}
		reps := []*grade.Report{doc.Report}
		if doc.Suite != nil {
			reps = doc.Suite.Reports
		}
		if doc.Suite != nil {
			doc.Suite.Reports = doc.Suite.Reports[:min(1, len(doc.Suite.Reports))]
			reps = doc.Suite.Reports
		}
		for _, r := range reps {
			r.Evidence.Variants.List = r.Evidence.Variants.List[:min(1, len(r.Evidence.Variants.List))]
			r.Findings = r.Findings[:min(1, len(r.Findings))]
			r.Evidence.Old.Steps = r.Evidence.Old.Steps[:min(3, len(r.Evidence.Old.Steps))]
			r.Evidence.New.Steps = r.Evidence.New.Steps[:min(3, len(r.Evidence.New.Steps))]
			r.Evidence.Noise = r.Evidence.Noise[:min(1, len(r.Evidence.Noise))]
			r.Evidence.Invariants = r.Evidence.Invariants[:min(1, len(r.Evidence.Invariants))]
		}
		var small any = doc.Report
		if doc.Suite != nil {
			small = doc.Suite
		}
		b, err = json.Marshal(small)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 6<<10 {
			f.Fatalf("seed from %s is %d bytes: cut it further", g.name, len(b))
		}
		f.Add(b)
	}
	f.Add([]byte(`{"schema_version":1,"verdict":"x","evidence":{"new":{"steps":[{"step":1,"ran":true,"at_us":-5,"conn":3},{"step":1,"at_us":9223372036854775807}]},"failure":{"step":1}}}`))
	f.Add([]byte(`{"schema_version":1,"suite":true,"headline":7,"reports":[{"schema_version":1,"evidence":{}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := htmlreport.Decode(b)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := doc.Render(&buf); err != nil {
			t.Fatalf("render: %v", err)
		}
	})
}

// smallReport is a report of n steps on 24 connections, the failure at
// step F, every 10,000th step followed by 90 s of quiet.
func smallReport(n, F int) *grade.Report {
	ok := kavach.Outcome{Kind: kavach.OK}
	rep := &grade.Report{SchemaVersion: 1, Verdict: "fixed", Parts: grade.Verdict{Kind: grade.Fixed},
		Fixture:  grade.Fixture{Path: "big.kavach", Steps: n, Protocol: "resp"},
		Evidence: grade.Evidence{Failure: kavach.Failure{Step: F, Signature: "crash"}}}
	var at int64
	for i := 1; i <= n; i++ {
		at += 1000
		if i > 1 && (i-1)%10_000 == 0 {
			at += 90_000_000
		}
		rec := ok
		if i == F {
			rec = kavach.Outcome{Kind: kavach.Crash}
		}
		s := grade.StepEvidence{Step: i, Request: fmt.Sprintf("GET k%d", i), Ran: true, Recorded: rec, Outcome: ok, Conn: uint64(i%24 + 1), AtUS: at}
		rep.Evidence.New.Steps = append(rep.Evidence.New.Steps, s)
		o := s
		o.Outcome, o.Conn, o.AtUS = rec, 0, 0
		rep.Evidence.Old.Steps = append(rep.Evidence.Old.Steps, o)
	}
	return rep
}

func noiseField(step int, path string) replay.NoiseField {
	return replay.NoiseField{Step: step, Path: path, Values: []string{`"a"`, `"c"`}, Differed: 2, Of: 2}
}

func diff(step int, path, want, got string) replay.Diff {
	return replay.Diff{Step: step, Path: path, Want: want, Got: got}
}

// TestExplainedSteps: a step after the failure the report explains shows
// why, by which rule, and the old build's answer beside the recorded and
// the new one.
func TestExplainedSteps(t *testing.T) {
	rep := smallReport(8, 5)
	rep.Evidence.New.Steps[5].Diffs = []replay.Diff{diff(6, "reply[0]", "0", "3")}
	rep.Evidence.New.Steps[5].Output, rep.Evidence.New.Steps[5].RecordedOutput = []any{3.0}, []any{0.0}
	rep.Evidence.Old.Steps[5].Output = []any{0.0}
	rep.Explained = []grade.Explained{{Step: 6, Reason: grade.ReasonInputs, Rule: grade.RuleObserved,
		Inputs: []grade.InputField{{Field: "LEFT digest", Old: "none", New: "3c2a"}}}}
	var buf bytes.Buffer
	if err := htmlreport.Report(&buf, rep); err != nil {
		t.Fatal(err)
	}
	table := between(t, buf.String(), `<table class="st">`, "</table>")
	want := `<td><code>ok: [0]</code></td><td>ok: [0]</td><td><code>ok: [3]</code></td><td>explained after the failure: what it read differs between the builds (LEFT digest); observed</td>`
	if !strings.Contains(table, want) {
		t.Errorf("the steps table lacks %s\n%s", want, table)
	}
}
