package htmlreport_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/htmlreport"
	"github.com/kavach-dev/kavach/recount"
)

// TestSWEBenchPage: a SWE-bench archive's page holds the three answers
// apart: the resolved count against the summary, the ids against the
// split, and each inconsistent instance with the tests that contradict
// it; green when all holds, red when not.
func TestSWEBenchPage(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("logs/a__a-1/report.json", `{"a__a-1": {"resolved": true, "tests_status": {"FAIL_TO_PASS": {"success": ["t_fix"], "failure": []}, "PASS_TO_PASS": {"success": ["t_a"], "failure": []}}}}`)
	write("logs/a__a-2/report.json", `{"a__a-2": {"resolved": false, "tests_status": {"FAIL_TO_PASS": {"success": [], "failure": ["t_bug"]}, "PASS_TO_PASS": {"success": [], "failure": []}}}}`)
	render := func(summary string) string {
		t.Helper()
		a, err := recount.ScanSWEBench(dir)
		if err != nil {
			t.Fatal(err)
		}
		s, err := recount.ParseSWESummary([]byte(summary))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := htmlreport.SWEBench(&buf, a.Answers(s, "results.json", []string{"a__a-1", "a__a-2", "a__a-3"}, "split.txt")); err != nil {
			t.Fatal(err)
		}
		checkSelfContained(t, buf.String())
		return buf.String()
	}
	page := render(`{"resolved": ["a__a-1"], "no_generation": ["a__a-3"]}`)
	for _, want := range []string{
		`<header class="verdict green">`,
		`<td class="v green">match</td>`,
		"<tr><th>accounted for by no_generation</th><td>a__a-3</td></tr>",
		"2 instances consistent, 0 inconsistent.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the clean archive's page lacks %s", want)
		}
	}

	write("logs/a__a-2/report.json", `{"a__a-2": {"resolved": true, "tests_status": {"FAIL_TO_PASS": {"success": [], "failure": ["t_bug"]}, "PASS_TO_PASS": {"success": [], "failure": []}}}}`)
	page = render(`{"resolved": ["a__a-1"]}`)
	for _, want := range []string{
		`<header class="verdict red">`,
		`<td class="v red">MISMATCH: the summary says 1</td>`,
		`<tr class="diff"><th>missing (in the split, no instance folder)</th><td>a__a-3</td></tr>`,
		`<tr class="diff"><td>a__a-2</td><td>resolved true, yet FAIL_TO_PASS failure: t_bug</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the faulty archive's page lacks %s", want)
		}
	}
}
