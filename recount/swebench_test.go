package recount

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sweReport is one instance's report.json as the archive writes it.
func sweReport(id string, resolved bool, f2pOK, f2pBad, p2pOK, p2pBad []string) map[string]any {
	list := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	return map[string]any{id: map[string]any{
		"patch_is_None": false, "patch_exists": true, "patch_successfully_applied": true, "resolved": resolved,
		"tests_status": map[string]any{
			"FAIL_TO_PASS": map[string]any{"success": list(f2pOK), "failure": list(f2pBad)},
			"PASS_TO_PASS": map[string]any{"success": list(p2pOK), "failure": list(p2pBad)},
			"FAIL_TO_FAIL": map[string]any{"success": []string{}, "failure": []string{}},
			"PASS_TO_FAIL": map[string]any{"success": []string{}, "failure": []string{}},
		}}}
}

// sweArchive lays out a clean archive as SWE-bench's experiments do
// (logs/ID/report.json, results/results.json) and returns its folder,
// the split file, and the summary file. Of the split's six instances:
// two resolved, one not (a FAIL_TO_PASS test fails), one whose patch did
// not apply (no tests_status), one without a patch (no_generation) and
// one without logs (no_logs: its folder holds no report).
func sweArchive(t *testing.T) (dir, split, results string) {
	dir = t.TempDir()
	logs := filepath.Join(dir, "logs")
	writeJSON(t, filepath.Join(logs, "a__a-1", "report.json"), sweReport("a__a-1", true, []string{"t_fix"}, nil, []string{"t_a", "t_b"}, nil))
	writeJSON(t, filepath.Join(logs, "a__a-2", "report.json"), sweReport("a__a-2", false, nil, []string{"t_bug"}, []string{"t_c"}, nil))
	writeJSON(t, filepath.Join(logs, "b__b-3", "report.json"), sweReport("b__b-3", true, []string{"t_x", "t_y"}, nil, nil, nil))
	writeJSON(t, filepath.Join(logs, "b__b-4", "report.json"), map[string]any{"b__b-4": map[string]any{
		"patch_is_None": false, "patch_exists": true, "patch_successfully_applied": false, "resolved": false}})
	writeFile(t, filepath.Join(logs, "b__b-6", "run_instance.log"), "error: no test output\n")
	writeFile(t, filepath.Join(logs, "a__a-1", "patch.diff"), "diff --git a/x b/x\n")
	results = filepath.Join(dir, "results", "results.json")
	writeFile(t, results, `{"no_generation": ["b__b-5"], "no_logs": ["b__b-6"], "resolved": ["a__a-1", "b__b-3"]}`)
	split = filepath.Join(t.TempDir(), "split.txt")
	writeFile(t, split, "a__a-1\na__a-2\nb__b-3\nb__b-4\nb__b-5\nb__b-6\n")
	return dir, split, results
}

// sweAnswers scans dir and gives the three answers.
func sweAnswers(t *testing.T, dir, splitFile, resultsFile string) (*SWEArchive, SWERecount, Reconciliation, SWEConsistency) {
	t.Helper()
	a, err := ScanSWEBench(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(resultsFile)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSWESummary(b)
	if err != nil {
		t.Fatalf("ParseSWESummary: %v", err)
	}
	if b, err = os.ReadFile(splitFile); err != nil {
		t.Fatal(err)
	}
	split, err := ParseSplit(b)
	if err != nil {
		t.Fatalf("ParseSplit: %v", err)
	}
	return a, a.Recount(s, resultsFile), a.Reconcile(split, s, splitFile), a.Consistency()
}

// TestSWEBenchClean: a clean archive matches its summary, reconciles
// with its split (the no_generation and no_logs instances accounted
// for) and is consistent throughout.
func TestSWEBenchClean(t *testing.T) {
	dir, split, results := sweArchive(t)
	a, rc, rec, cs := sweAnswers(t, dir, split, results)
	if !a.Found() || len(a.Instances) != 4 || len(a.Unreadable) != 0 || !slices.Equal(a.NoReport, []string{"b__b-6"}) {
		t.Fatalf("ScanSWEBench = %+v", a)
	}
	if rc.Resolved != 2 || rc.Unresolved != 2 || rc.Instances != 5 || rc.Summary == nil || !rc.Summary.Match {
		t.Errorf("Recount = %+v, summary %+v; want 2 resolved of 5, matching", rc, rc.Summary)
	}
	if !rec.Match || rec.Split != 6 || !slices.Equal(rec.NoGeneration, []string{"b__b-5"}) || !slices.Equal(rec.NoLogs, []string{"b__b-6"}) {
		t.Errorf("Reconcile = %+v, want a match, b__b-5 no_generation, b__b-6 no_logs", rec)
	}
	if len(cs.Inconsistent) != 0 || len(cs.Consistent) != 4 {
		t.Errorf("Consistency = %+v, want 4 consistent", cs)
	}
	if l := a.LogsUnavailable(&SWESummary{NoLogs: []string{"b__b-6"}}); len(l) != 1 || !l[0].Accounted {
		t.Errorf("LogsUnavailable = %+v, want b__b-6 accounted for", l)
	}
}

// TestSWEBenchEditedResolved: an instance's resolved edited to true,
// its FAIL_TO_PASS test still failing: self-consistency names it and the
// failing test; the recount no longer matches, and names it too.
func TestSWEBenchEditedResolved(t *testing.T) {
	dir, split, results := sweArchive(t)
	writeJSON(t, filepath.Join(dir, "logs", "a__a-2", "report.json"), sweReport("a__a-2", true, nil, []string{"t_bug"}, []string{"t_c"}, nil))
	_, rc, rec, cs := sweAnswers(t, dir, split, results)
	if len(cs.Inconsistent) != 1 || cs.Inconsistent[0].Instance != "a__a-2" || !slices.Equal(cs.Inconsistent[0].F2PFailure, []string{"t_bug"}) {
		t.Fatalf("Consistency = %+v, want a__a-2 with FAIL_TO_PASS failure t_bug", cs)
	}
	if w := cs.Inconsistent[0].Why(); w != "resolved true, yet FAIL_TO_PASS failure: t_bug" {
		t.Errorf("Why = %q", w)
	}
	if rc.Summary.Match || rc.Resolved != 3 || !slices.Equal(rc.Summary.NotInSummary, []string{"a__a-2"}) {
		t.Errorf("Recount = %+v, summary %+v; want 3 resolved, a__a-2 not in the summary", rc, rc.Summary)
	}
	if !rec.Match {
		t.Errorf("Reconcile = %+v, want the ids untouched", rec)
	}
}

// TestSWEBenchTestMoved: a PASS_TO_PASS test moved from success to
// failure in a resolved instance: self-consistency catches it, the
// recount (resolved as written) still matches: two answers, apart.
func TestSWEBenchTestMoved(t *testing.T) {
	dir, split, results := sweArchive(t)
	writeJSON(t, filepath.Join(dir, "logs", "a__a-1", "report.json"), sweReport("a__a-1", true, []string{"t_fix"}, nil, []string{"t_b"}, []string{"t_a"}))
	_, rc, _, cs := sweAnswers(t, dir, split, results)
	if len(cs.Inconsistent) != 1 || cs.Inconsistent[0].Instance != "a__a-1" || !slices.Equal(cs.Inconsistent[0].P2PFailure, []string{"t_a"}) {
		t.Errorf("Consistency = %+v, want a__a-1 with PASS_TO_PASS failure t_a", cs)
	}
	if !rc.Summary.Match {
		t.Errorf("Recount = %+v, want the summary still matched", rc.Summary)
	}

	// And the reverse: every test passed, resolved written false.
	writeJSON(t, filepath.Join(dir, "logs", "a__a-1", "report.json"), sweReport("a__a-1", false, []string{"t_fix"}, nil, []string{"t_a", "t_b"}, nil))
	_, _, _, cs = sweAnswers(t, dir, split, results)
	if len(cs.Inconsistent) != 1 || !strings.Contains(cs.Inconsistent[0].Why(), "resolved false, yet every test is in success (FAIL_TO_PASS 1, PASS_TO_PASS 2)") {
		t.Errorf("Consistency = %+v, want a__a-1 resolved false with every test in success", cs)
	}
}

// TestSWEBenchCountOffByOne: results.json's count one more than the
// reports', as a count and as a list: MISMATCH.
func TestSWEBenchCountOffByOne(t *testing.T) {
	dir, split, results := sweArchive(t)
	writeFile(t, results, `{"resolved": 3, "no_generation": ["b__b-5"], "no_logs": ["b__b-6"]}`)
	_, rc, rec, cs := sweAnswers(t, dir, split, results)
	if rc.Summary.Match || rc.Summary.Resolved != 3 || rc.Resolved != 2 {
		t.Errorf("Recount summary = %+v, want 3 against 2: a mismatch", rc.Summary)
	}
	if !rec.Match || len(cs.Inconsistent) != 0 {
		t.Errorf("Reconcile %+v, Consistency %+v: want both untouched", rec, cs)
	}
	writeFile(t, results, `{"resolved": ["a__a-1", "a__a-2", "b__b-3"], "no_generation": ["b__b-5"], "no_logs": ["b__b-6"]}`)
	_, rc, _, _ = sweAnswers(t, dir, split, results)
	if rc.Summary.Match || !slices.Equal(rc.Summary.NotResolvedHere, []string{"a__a-2"}) {
		t.Errorf("Recount summary = %+v, want a__a-2 listed and not resolved here", rc.Summary)
	}
}

// TestSWEBenchInstanceMissing: an instance's folder removed: the
// reconciliation names it missing; when it was resolved, the recount
// no longer matches either.
func TestSWEBenchInstanceMissing(t *testing.T) {
	dir, split, results := sweArchive(t)
	if err := os.RemoveAll(filepath.Join(dir, "logs", "a__a-2")); err != nil {
		t.Fatal(err)
	}
	_, rc, rec, _ := sweAnswers(t, dir, split, results)
	if rec.Match || !slices.Equal(rec.Missing, []string{"a__a-2"}) {
		t.Errorf("Reconcile = %+v, want a__a-2 missing", rec)
	}
	if !rc.Summary.Match {
		t.Errorf("Recount = %+v: an unresolved instance gone leaves the count", rc.Summary)
	}
	if err := os.RemoveAll(filepath.Join(dir, "logs", "b__b-3")); err != nil {
		t.Fatal(err)
	}
	_, rc, rec, _ = sweAnswers(t, dir, split, results)
	if rc.Summary.Match || !slices.Equal(rc.Summary.NotResolvedHere, []string{"b__b-3"}) || !slices.Equal(rec.Missing, []string{"a__a-2", "b__b-3"}) {
		t.Errorf("Recount %+v, Reconcile %+v: want b__b-3 in both", rc.Summary, rec)
	}

	// An instance that is not in the split: extra.
	writeJSON(t, filepath.Join(dir, "logs", "c__c-9", "report.json"), sweReport("c__c-9", false, nil, []string{"t"}, nil, nil))
	_, _, rec, _ = sweAnswers(t, dir, split, results)
	if !slices.Equal(rec.Extra, []string{"c__c-9"}) {
		t.Errorf("Reconcile extra = %v, want c__c-9", rec.Extra)
	}
}

// TestSWEBenchUnreadable: a truncated report, one naming another
// instance, and one with no resolved are listed, never counted either
// way; the instance is still in the archive's ids.
func TestSWEBenchUnreadable(t *testing.T) {
	dir, split, results := sweArchive(t)
	path := filepath.Join(dir, "logs", "a__a-2", "report.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ text, reason string }{
		{string(b[:len(b)/2]), "not JSON"},
		{`{"a__a-7": {"resolved": false}}`, `instance "a__a-7"'s report, in folder "a__a-2"`},
		{`{"a__a-2": {"patch_exists": true}}`, `no "resolved"`},
		{`{"a__a-2": {"resolved": "yes"}}`, `"resolved" is "yes"`},
		{`{"a__a-2": {"resolved": true, "tests_status": {"FAIL_TO_PASS": {"success": []}}}}`, `FAIL_TO_PASS: want both`},
		{`{"a__a-2": {"resolved": true, "tests_status": {"FAIL_TO_PASS": {"success": [], "failure": []}}}}`, `no PASS_TO_PASS`},
	} {
		writeFile(t, path, tc.text)
		a, rc, rec, cs := sweAnswers(t, dir, split, results)
		if len(a.Unreadable) != 1 || !strings.Contains(a.Unreadable[0].Reason, tc.reason) || a.Unreadable[0].Instance != "a__a-2" {
			t.Errorf("%s: Unreadable = %+v, want a__a-2 saying %q", tc.text, a.Unreadable, tc.reason)
			continue
		}
		if rc.Reports != 3 || rc.Instances != 5 || len(cs.Consistent)+len(cs.Inconsistent) != 3 || !rec.Match {
			t.Errorf("%s: Recount %+v, Consistency %+v, Reconcile %+v", tc.text, rc, cs, rec)
		}
	}
}

// TestSWEBenchKavachAlone: Kavach's reports, named report.json or not,
// are no SWE-bench archive.
func TestSWEBenchKavachAlone(t *testing.T) {
	dir := t.TempDir()
	writeJSON(t, filepath.Join(dir, "t__1", "report.json"), heldReport())
	writeFile(t, filepath.Join(dir, "t__2", "report.json"), `{"schema_version": 1, "verd`)
	a, err := ScanSWEBench(dir)
	if err != nil || a.Found() || len(a.Unreadable) != 0 {
		t.Errorf("ScanSWEBench of a Kavach job = %+v, %v; want nothing found", a, err)
	}
}

func TestParseSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{"b\n\na\n# comment\n", []string{"a", "b"}, ""},
		{`["b", "a"]`, []string{"a", "b"}, ""},
		{`[{"instance_id": "a", "repo": "x/y"}, {"instance_id": "b"}]`, []string{"a", "b"}, ""},
		{"{\"instance_id\": \"a\"}\n{\"instance_id\": \"b\"}\n", []string{"a", "b"}, ""},
		{"a\na\n", nil, `"a" is listed twice`},
		{"", nil, "no instance ids"},
		{`[1]`, nil, "entry 1"},
		{"a b\n", nil, "line 1"},
		{`[{"id": "a"}]`, nil, "instance_id"},
	} {
		got, err := ParseSplit([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSplit(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseSplit(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseSWESummary(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		err  string
	}{
		{`{"resolved": ["a", "b"], "no_generation": [], "no_logs": ["c"], "generated": ["a", "b"]}`, 2, ""},
		{`{"resolved": 7}`, 7, ""},
		{`{"resolved": -1}`, 0, "not a count"},
		{`{"resolved": ["a", "a"]}`, 0, "listed twice"},
		{`{"no_logs": []}`, 0, `no "resolved"`},
		{`{"resolved": 1, "no_logs": "c"}`, 0, `"no_logs"`},
		{`null`, 0, "not a JSON object"},
		{`{"fixed": 1}`, 0, `no "resolved"`},
	} {
		s, err := ParseSWESummary([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSWESummary(%s) = %+v, %v; want an error saying %q", tc.in, s, err, tc.err)
			}
			continue
		}
		if err != nil || s.Resolved != tc.want {
			t.Errorf("ParseSWESummary(%s) = %+v, %v; want %d resolved", tc.in, s, err, tc.want)
		}
	}
}

// FuzzParseSWEReport: any bytes give an instance, an error, or "not
// SWE-bench"; never a panic. An instance read is the folder's, and its
// resolved is what its bytes say.
func FuzzParseSWEReport(f *testing.F) {
	for _, r := range []any{
		sweReport("a__a-1", true, []string{"t"}, nil, []string{"u"}, nil),
		map[string]any{"a__a-1": map[string]any{"resolved": false, "patch_successfully_applied": false}},
		map[string]any{"resolved": true, "tests_status": nil},
	} {
		b, _ := json.Marshal(r)
		f.Add(b)
	}
	f.Add([]byte(`{"a__a-1": {"resolved": true, "tests_status": {"FAIL_TO_PASS": {"success": [], "failure": ["x"]}, "PASS_TO_PASS": {"success": null, "failure": []}}}}`))
	f.Add([]byte(`{"schema_version": 1`))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ParseSWEReport(b, "a__a-1")
		if err != nil {
			if in.ID != "" {
				t.Errorf("an error with an instance %+v", in)
			}
			return
		}
		if in.ID != "a__a-1" {
			t.Errorf("instance %q from folder a__a-1", in.ID)
		}
		if !in.Tests && (in.F2PFailure != nil || in.P2PFailure != nil) {
			t.Errorf("test lists without tests_status: %+v", in)
		}
		if !strings.Contains(string(b), "resolved") {
			t.Errorf("an instance read from bytes with no \"resolved\": %q", b)
		}
	})
}

// FuzzParseSplit: any bytes give a sorted list of distinct, non-empty
// ids, or an error; never a panic.
func FuzzParseSplit(f *testing.F) {
	f.Add([]byte("a__a-1\nb__b-2\n"))
	f.Add([]byte(`["a", "b"]`))
	f.Add([]byte(`[{"instance_id": "a"}]`))
	f.Add([]byte("{\"instance_id\": \"a\"}\n# x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := ParseSplit(b)
		if err != nil {
			return
		}
		if len(ids) == 0 {
			t.Error("no ids and no error")
		}
		for i, id := range ids {
			if id == "" || (i > 0 && ids[i-1] >= id) {
				t.Fatalf("ids %q: not sorted, distinct and non-empty", ids)
			}
		}
	})
}

// FuzzParseSWESummary: any bytes give a summary whose resolved count is
// 0 or more (the length of its list when it lists them), or an error.
func FuzzParseSWESummary(f *testing.F) {
	f.Add([]byte(`{"resolved": ["a"], "no_generation": ["b"], "no_logs": []}`))
	f.Add([]byte(`{"resolved": 3}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSWESummary(b)
		if err != nil {
			return
		}
		if s.Resolved < 0 || (s.ResolvedIDs != nil && len(s.ResolvedIDs) != s.Resolved) {
			t.Errorf("summary %+v", s)
		}
	})
}

// TestSWEBenchFlatLayout: instance folders straight under DIR, beside
// results/: results/ is no instance; the report without the id around
// it is read, its folder naming the instance; a hidden folder is left out.
func TestSWEBenchFlatLayout(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a__a-1", "report.json"), `{"resolved": false, "tests_status": {"FAIL_TO_PASS": {"success": [], "failure": ["t"]}, "PASS_TO_PASS": {"success": [], "failure": []}}}`)
	writeFile(t, filepath.Join(dir, "results", "results.json"), `{"resolved": []}`)
	writeFile(t, filepath.Join(dir, ".cache", "x"), "")
	a, err := ScanSWEBench(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Instances) != 1 || a.Instances[0].ID != "a__a-1" || len(a.NoReport) != 0 || a.Results == "" {
		t.Errorf("ScanSWEBench = %+v, want a__a-1 alone, no folder without a report", a)
	}
	if f := a.Answers(&SWESummary{}, "results.json", nil, "").Faults(); len(f) != 0 {
		t.Errorf("Faults = %q, want none", f)
	}
}
