package recount

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// A SWE-bench evaluation archive (SWE-bench's experiments, one
// leaderboard entry) holds, per instance, a folder named by the
// instance's id with report.json:
//
//	{"astropy__astropy-12907": {"patch_successfully_applied": true, "resolved": true,
//	  "tests_status": {"FAIL_TO_PASS": {"success": [...], "failure": [...]},
//	                   "PASS_TO_PASS": {"success": [...], "failure": [...]}}}}
//
// and a published summary, results/results.json, with the resolved
// instances ("resolved": a list of ids, or a count) and the ones without
// a patch ("no_generation") or without logs ("no_logs"). The archive
// states both the verdict and the test results it should follow from;
// what is checked here is what the archive itself states, never whether
// a patch is correct.

// SWEInstance is one instance's report as the archive writes it.
type SWEInstance struct {
	ID       string
	Report   string // the report's path
	Resolved bool
	// Tests is false when the report has no tests_status (the patch did
	// not apply, say): there are no test results to check it against.
	Tests      bool
	F2PSuccess []string
	F2PFailure []string
	P2PSuccess []string
	P2PFailure []string
}

// SWEUnreadable is an instance's report.json that could not be read as one.
type SWEUnreadable struct {
	Instance string `json:"instance"` // its folder's name
	Path     string `json:"path"`
	Reason   string `json:"reason"`
}

// SWEArchive is every instance folder under a directory.
type SWEArchive struct {
	Dir       string
	Instances []SWEInstance // with a readable report, sorted by ID
	// Unreadable are reports that could not be read as one; NoReport
	// the instance folders with no report.json (logs-unavailable).
	Unreadable []SWEUnreadable
	NoReport   []string
	// Results is DIR/results/results.json when the archive has one.
	Results string
}

// IDs are the archive's instance ids: every instance folder, with a
// report read or not.
func (a *SWEArchive) IDs() []string {
	var ids []string
	for _, in := range a.Instances {
		ids = append(ids, in.ID)
	}
	for _, u := range a.Unreadable {
		ids = append(ids, u.Instance)
	}
	ids = append(ids, a.NoReport...)
	sort.Strings(ids)
	return slices.Compact(ids)
}

// Found says whether dir held a SWE-bench archive at all: a readable
// instance report, or a results/results.json.
func (a *SWEArchive) Found() bool {
	return len(a.Instances) > 0 || a.Results != ""
}

// ScanSWEBench reads every SWE-bench instance report under dir: each
// file named report.json whose object is {ID: {"resolved": ...}} (as
// the archive writes it) or {"resolved": ...} (the folder naming the
// instance). Its folder is the instance's; every other folder beside
// one (in logs/, as the archive lays them out) is an instance too, and
// one with no report.json is listed in NoReport. A report.json that is
// not JSON, or not of that shape while not a Kavach report, is
// Unreadable.
func ScanSWEBench(dir string) (*SWEArchive, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	a := &SWEArchive{Dir: dir}
	if st, err := os.Stat(filepath.Join(dir, "results", "results.json")); err == nil && !st.IsDir() {
		a.Results = filepath.Join(dir, "results", "results.json")
	}
	parents := map[string]bool{}  // folders holding instance folders
	instance := map[string]bool{} // instance folders with a report.json
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "report.json" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		folder := filepath.Dir(path)
		in, err := ParseSWEReport(b, filepath.Base(folder))
		if errors.Is(err, errNotSWE) {
			return nil
		}
		parents[filepath.Dir(folder)] = true
		instance[folder] = true
		if err != nil {
			a.Unreadable = append(a.Unreadable, SWEUnreadable{Instance: filepath.Base(folder), Path: path, Reason: err.Error()})
			return nil
		}
		in.Report = path
		a.Instances = append(a.Instances, in)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Only where there is an instance report beside them are folders
	// taken for instances (not hidden ones, nor one holding results.json).
	if len(a.Instances) > 0 {
		for p := range parents {
			entries, err := os.ReadDir(p)
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				sub := filepath.Join(p, e.Name())
				if !e.IsDir() || instance[sub] || strings.HasPrefix(e.Name(), ".") {
					continue
				}
				if _, err := os.Stat(filepath.Join(sub, "results.json")); err == nil {
					continue // the archive's results/, beside the instances
				}
				a.NoReport = append(a.NoReport, e.Name())
			}
		}
	}
	sort.Slice(a.Instances, func(i, j int) bool { return a.Instances[i].ID < a.Instances[j].ID })
	sort.Slice(a.Unreadable, func(i, j int) bool { return a.Unreadable[i].Path < a.Unreadable[j].Path })
	sort.Strings(a.NoReport)
	a.NoReport = slices.Compact(a.NoReport)
	return a, nil
}

// errNotSWE: valid JSON that is not an instance report (a Kavach
// report named report.json, say); left alone.
var errNotSWE = errors.New("not a SWE-bench instance report")

// ParseSWEReport reads one instance's report.json; folder is the name of
// its folder, the instance's id when the report does not name one. An
// error says what is wrong; errNotSWE, that b is JSON of another kind.
func ParseSWEReport(b []byte, folder string) (SWEInstance, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		if bytes.Contains(b, []byte(`"schema_version"`)) {
			return SWEInstance{}, errNotSWE // a Kavach report cut short: recount.Scan lists it
		}
		return SWEInstance{}, fmt.Errorf("not JSON, %d bytes (truncated?): %v", len(b), err)
	}
	if _, ok := top["schema_version"]; ok {
		return SWEInstance{}, errNotSWE
	}
	in := SWEInstance{ID: folder}
	body := top
	if _, flat := top["resolved"]; !flat {
		if len(top) != 1 {
			return SWEInstance{}, fmt.Errorf("want one instance's report, {%q: {\"resolved\": ...}}; it has %d keys", folder, len(top))
		}
		for id, raw := range top {
			if id != folder {
				return SWEInstance{}, fmt.Errorf("it is instance %q's report, in folder %q", cut(id, 80), cut(folder, 80))
			}
			var inner map[string]json.RawMessage
			if err := json.Unmarshal(raw, &inner); err != nil || inner == nil {
				return SWEInstance{}, fmt.Errorf("instance %q: not an object", cut(id, 80))
			}
			body = inner
		}
	}
	raw, ok := body["resolved"]
	if !ok {
		return SWEInstance{}, errors.New(`no "resolved"`)
	}
	if err := json.Unmarshal(raw, &in.Resolved); err != nil || string(bytes.TrimSpace(raw)) == "null" {
		return SWEInstance{}, fmt.Errorf(`"resolved" is %s, not true or false`, cut(string(raw), 40))
	}
	ts, ok := body["tests_status"]
	if !ok || string(bytes.TrimSpace(ts)) == "null" {
		return in, nil
	}
	var status map[string]json.RawMessage
	if err := json.Unmarshal(ts, &status); err != nil || status == nil {
		return SWEInstance{}, errors.New(`"tests_status" is not an object`)
	}
	in.Tests = true
	for _, g := range []struct {
		key              string
		success, failure *[]string
	}{{"FAIL_TO_PASS", &in.F2PSuccess, &in.F2PFailure}, {"PASS_TO_PASS", &in.P2PSuccess, &in.P2PFailure}} {
		raw, ok := status[g.key]
		if !ok {
			return SWEInstance{}, fmt.Errorf(`"tests_status" has no %s`, g.key)
		}
		var lists struct {
			Success *[]string `json:"success"`
			Failure *[]string `json:"failure"`
		}
		if err := json.Unmarshal(raw, &lists); err != nil {
			return SWEInstance{}, fmt.Errorf("%s: want {\"success\": [names], \"failure\": [names]}: %v", g.key, err)
		}
		if lists.Success == nil || lists.Failure == nil {
			return SWEInstance{}, fmt.Errorf(`%s: want both "success" and "failure" lists`, g.key)
		}
		*g.success, *g.failure = *lists.Success, *lists.Failure
	}
	return in, nil
}

// SWESummary is the archive's published results (results/results.json).
type SWESummary struct {
	Resolved int
	// ResolvedIDs is the list of resolved instances when the summary
	// gives one (nil when it gives a count).
	ResolvedIDs  []string
	NoGeneration []string
	NoLogs       []string
}

// ParseSWESummary reads results/results.json: an object with "resolved",
// a list of instance ids or a count, and optionally "no_generation" and
// "no_logs", lists of ids. Its other keys (older archives list
// "generated", "applied", ...) are not read.
func ParseSWESummary(b []byte) (*SWESummary, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil || top == nil {
		if err == nil {
			err = errors.New("null")
		}
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	raw, ok := top["resolved"]
	if !ok {
		return nil, errors.New(`no "resolved" (a list of instance ids, or a count)`)
	}
	s := &SWESummary{}
	var n int
	if err := json.Unmarshal(raw, &n); err == nil {
		if n < 0 {
			return nil, fmt.Errorf(`"resolved": %d is not a count`, n)
		}
		s.Resolved = n
	} else if ids, err := idList(raw); err == nil {
		s.ResolvedIDs = ids
		s.Resolved = len(ids)
	} else {
		return nil, fmt.Errorf(`"resolved" is neither a list of instance ids nor a count: %v`, err)
	}
	for key, into := range map[string]*[]string{"no_generation": &s.NoGeneration, "no_logs": &s.NoLogs} {
		raw, ok := top[key]
		if !ok {
			continue
		}
		ids, err := idList(raw)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", key, err)
		}
		*into = ids
	}
	return s, nil
}

// idList reads a JSON list of instance ids, sorted; an id twice is an
// error (a count of it would be off).
func idList(raw json.RawMessage) ([]string, error) {
	var ids []string
	if err := json.Unmarshal(raw, &ids); err != nil || ids == nil {
		return nil, errors.New("not a list of instance ids")
	}
	sort.Strings(ids)
	for i, id := range ids {
		if id == "" {
			return nil, errors.New("an empty instance id")
		}
		if i > 0 && ids[i-1] == id {
			return nil, fmt.Errorf("%q is listed twice", cut(id, 80))
		}
	}
	return ids, nil
}

// ParseSplit reads the ids of a benchmark's split: a JSON list of ids,
// or of objects with "instance_id" (the dataset's rows); else one id a
// line (blank lines and lines starting with # skipped), a line that is
// a JSON object giving its "instance_id" (JSON Lines).
func ParseSplit(b []byte) ([]string, error) {
	trimmed := bytes.TrimSpace(b)
	var ids []string
	add := func(id, where string) error {
		if id == "" {
			return fmt.Errorf("%s: an empty instance id", where)
		}
		ids = append(ids, id)
		return nil
	}
	if bytes.HasPrefix(trimmed, []byte("[")) {
		var list []json.RawMessage
		if err := json.Unmarshal(trimmed, &list); err != nil {
			return nil, fmt.Errorf("a JSON list: %v", err)
		}
		for i, raw := range list {
			id, err := splitEntry(raw)
			if err != nil {
				return nil, fmt.Errorf("entry %d: %v", i+1, err)
			}
			if err := add(id, fmt.Sprintf("entry %d", i+1)); err != nil {
				return nil, err
			}
		}
	} else {
		for i, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			id := line
			if strings.HasPrefix(line, "{") {
				var err error
				if id, err = splitEntry(json.RawMessage(line)); err != nil {
					return nil, fmt.Errorf("line %d: %v", i+1, err)
				}
			} else if strings.ContainsAny(line, " \t\"") {
				return nil, fmt.Errorf("line %d: %q is not an instance id (one id a line)", i+1, cut(line, 80))
			}
			if err := add(id, fmt.Sprintf("line %d", i+1)); err != nil {
				return nil, err
			}
		}
	}
	if len(ids) == 0 {
		return nil, errors.New("no instance ids")
	}
	sort.Strings(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return nil, fmt.Errorf("%q is listed twice", cut(ids[i], 80))
		}
	}
	return ids, nil
}

// splitEntry is one entry of a split: an id, or an object's "instance_id".
func splitEntry(raw json.RawMessage) (string, error) {
	var id string
	if json.Unmarshal(raw, &id) == nil {
		return id, nil
	}
	var row struct {
		InstanceID *string `json:"instance_id"`
	}
	if err := json.Unmarshal(raw, &row); err != nil || row.InstanceID == nil {
		return "", errors.New(`neither an instance id nor an object with "instance_id"`)
	}
	return *row.InstanceID, nil
}

// SWERecount is the first answer: how many reports say resolved, against
// the published summary.
type SWERecount struct {
	Instances  int      `json:"instances"` // instance folders
	Reports    int      `json:"reports"`   // readable reports
	Resolved   int      `json:"resolved"`
	Unresolved int      `json:"unresolved"`
	ResolvedIn []string `json:"resolved_instances"`
	// With a summary: its resolved count and whether it matches. When
	// the summary lists the resolved ids, the ids it lists that no
	// report says resolved (NotResolvedHere) and the reverse
	// (NotInSummary); a match needs both empty.
	Summary *SWESummaryCheck `json:"summary"`
}

// SWESummaryCheck is the recount against the published summary.
type SWESummaryCheck struct {
	File            string   `json:"file"`
	Resolved        int      `json:"resolved"`
	Match           bool     `json:"match"`
	NotResolvedHere []string `json:"listed_not_resolved_here"`
	NotInSummary    []string `json:"resolved_not_listed"`
}

// Recount counts the reports that say resolved and, given the summary
// (nil: none), compares.
func (a *SWEArchive) Recount(s *SWESummary, file string) SWERecount {
	r := SWERecount{Instances: len(a.IDs()), Reports: len(a.Instances), ResolvedIn: []string{}}
	for _, in := range a.Instances {
		if in.Resolved {
			r.Resolved++
			r.ResolvedIn = append(r.ResolvedIn, in.ID)
		} else {
			r.Unresolved++
		}
	}
	if s == nil {
		return r
	}
	c := &SWESummaryCheck{File: file, Resolved: s.Resolved, NotResolvedHere: []string{}, NotInSummary: []string{}}
	if s.ResolvedIDs != nil {
		c.NotResolvedHere = minus(s.ResolvedIDs, r.ResolvedIn)
		c.NotInSummary = minus(r.ResolvedIn, s.ResolvedIDs)
	}
	c.Match = c.Resolved == r.Resolved && len(c.NotResolvedHere) == 0 && len(c.NotInSummary) == 0
	r.Summary = c
	return r
}

// minus is the ids of a not in b; both sorted.
func minus(a, b []string) []string {
	out := []string{}
	for _, id := range a {
		if _, ok := slices.BinarySearch(b, id); !ok {
			out = append(out, id)
		}
	}
	return out
}

// Reconciliation is the second part of the recount: the archive's
// instance ids against the benchmark's split.
type Reconciliation struct {
	File  string `json:"file"`
	Split int    `json:"split"`
	// Missing: in the split, with no instance folder and not accounted
	// for by the summary. Extra: an instance folder not in the split.
	Missing []string `json:"missing"`
	Extra   []string `json:"extra"`
	// In the split, with no report, and listed by the summary's
	// no_generation or no_logs: accounted for.
	NoGeneration []string `json:"no_generation"`
	NoLogs       []string `json:"no_logs"`
	Match        bool     `json:"match"` // nothing missing, nothing extra
}

// Reconcile sets the archive's instance ids against the split's.
func (a *SWEArchive) Reconcile(split []string, s *SWESummary, file string) Reconciliation {
	r := Reconciliation{File: file, Split: len(split), Missing: []string{}, Extra: []string{}, NoGeneration: []string{}, NoLogs: []string{}}
	have := a.IDs()
	var noGen, noLogs []string
	if s != nil {
		noGen, noLogs = s.NoGeneration, s.NoLogs
	}
	read := make([]string, 0, len(a.Instances))
	for _, in := range a.Instances {
		read = append(read, in.ID)
	}
	for _, id := range split {
		_, folder := slices.BinarySearch(have, id)
		_, report := slices.BinarySearch(read, id)
		_, gen := slices.BinarySearch(noGen, id)
		_, logs := slices.BinarySearch(noLogs, id)
		switch {
		case report:
		case gen:
			r.NoGeneration = append(r.NoGeneration, id)
		case logs:
			r.NoLogs = append(r.NoLogs, id)
		case !folder:
			r.Missing = append(r.Missing, id)
		}
	}
	r.Extra = minus(have, split)
	r.Match = len(r.Missing) == 0 && len(r.Extra) == 0
	return r
}

// SWEConsistency is the second answer: each instance's resolved against
// its own test results.
type SWEConsistency struct {
	Consistent   []string          `json:"consistent"`
	Inconsistent []SWEInconsistent `json:"inconsistent"`
}

// SWEInconsistent is an instance whose resolved its tests contradict:
// resolved with a test in a failure list (or with no test results), or
// not resolved with every test in success.
type SWEInconsistent struct {
	Instance string `json:"instance"`
	Report   string `json:"report"`
	Resolved bool   `json:"resolved"` // as written
	// The tests that contradict it: for resolved, the failures; for
	// not resolved, the counts in success (the failure lists are empty).
	F2PFailure []string `json:"fail_to_pass_failure"`
	P2PFailure []string `json:"pass_to_pass_failure"`
	F2PSuccess int      `json:"fail_to_pass_success"`
	P2PSuccess int      `json:"pass_to_pass_success"`
	NoTests    bool     `json:"no_tests_status"` // resolved with no tests_status at all
}

// Why says in words what contradicts the instance's resolved.
func (i SWEInconsistent) Why() string {
	if i.NoTests {
		return "resolved true, yet the report has no tests_status"
	}
	if i.Resolved {
		var parts []string
		if len(i.F2PFailure) > 0 {
			parts = append(parts, "FAIL_TO_PASS failure: "+strings.Join(i.F2PFailure, " "))
		}
		if len(i.P2PFailure) > 0 {
			parts = append(parts, "PASS_TO_PASS failure: "+strings.Join(i.P2PFailure, " "))
		}
		return "resolved true, yet " + strings.Join(parts, "; ")
	}
	return fmt.Sprintf("resolved false, yet every test is in success (FAIL_TO_PASS %d, PASS_TO_PASS %d) and both failure lists are empty", i.F2PSuccess, i.P2PSuccess)
}

// Consistency checks each readable report: resolved must hold exactly
// when both failure lists are empty (every FAIL_TO_PASS and
// PASS_TO_PASS test the report lists is in success). A report with no
// tests_status is consistent when it says not resolved.
func (a *SWEArchive) Consistency() SWEConsistency {
	r := SWEConsistency{Consistent: []string{}, Inconsistent: []SWEInconsistent{}}
	for _, in := range a.Instances {
		passed := in.Tests && len(in.F2PFailure) == 0 && len(in.P2PFailure) == 0
		if passed == in.Resolved {
			r.Consistent = append(r.Consistent, in.ID)
			continue
		}
		r.Inconsistent = append(r.Inconsistent, SWEInconsistent{Instance: in.ID, Report: in.Report, Resolved: in.Resolved,
			F2PFailure: orEmpty(in.F2PFailure), P2PFailure: orEmpty(in.P2PFailure),
			F2PSuccess: len(in.F2PSuccess), P2PSuccess: len(in.P2PSuccess), NoTests: !in.Tests})
	}
	return r
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// LogsUnavailable is an instance folder with no report.json; Accounted
// when the summary's no_logs lists it (the archive says so itself).
type LogsUnavailable struct {
	Instance  string `json:"instance"`
	Accounted bool   `json:"listed_in_no_logs"`
}

// LogsUnavailable lists the instance folders with no report.
func (a *SWEArchive) LogsUnavailable(s *SWESummary) []LogsUnavailable {
	out := []LogsUnavailable{}
	for _, id := range a.NoReport {
		l := LogsUnavailable{Instance: id}
		if s != nil {
			_, l.Accounted = slices.BinarySearch(s.NoLogs, id)
		}
		out = append(out, l)
	}
	return out
}

// SWEResult is `kavach recount`'s answers for a SWE-bench archive, side
// by side and never merged.
type SWEResult struct {
	Dir            string          `json:"dir"`
	Format         string          `json:"format"` // "swe-bench"
	Recount        SWERecount      `json:"recount"`
	Reconciliation *Reconciliation `json:"reconciliation"` // null without a split
	Consistency    SWEConsistency  `json:"self_consistency"`
	// LogsUnavailable: instance folders with no report; Unreadable:
	// reports that could not be read. Neither is counted either way.
	LogsUnavailable []LogsUnavailable `json:"logs_unavailable"`
	Unreadable      []SWEUnreadable   `json:"unreadable"`
}

// Answers gives the archive's answers: the recount against the summary
// (s nil: none), the reconciliation with the split (split nil: none) and
// self-consistency.
func (a *SWEArchive) Answers(s *SWESummary, summaryFile string, split []string, splitFile string) SWEResult {
	r := SWEResult{Dir: a.Dir, Format: "swe-bench", Recount: a.Recount(s, summaryFile), Consistency: a.Consistency(),
		LogsUnavailable: a.LogsUnavailable(s), Unreadable: a.Unreadable}
	if r.Unreadable == nil {
		r.Unreadable = []SWEUnreadable{}
	}
	if split != nil {
		rec := a.Reconcile(split, s, splitFile)
		r.Reconciliation = &rec
	}
	return r
}

// Faults says, in words, what does not add up; none: everything
// matches and is consistent. A folder with no report that the summary's
// no_logs lists is no fault: the archive says so itself.
func (r SWEResult) Faults() []string {
	var out []string
	if c := r.Recount.Summary; c != nil && !c.Match {
		out = append(out, fmt.Sprintf("the summary says %d resolved, the reports %d", c.Resolved, r.Recount.Resolved))
		if c.Resolved == r.Recount.Resolved {
			out[len(out)-1] = "the summary lists other instances as resolved than the reports do"
		}
	}
	if rec := r.Reconciliation; rec != nil && !rec.Match {
		if n := len(rec.Missing); n > 0 {
			out = append(out, fmt.Sprintf("%d instances of the split missing", n))
		}
		if n := len(rec.Extra); n > 0 {
			out = append(out, fmt.Sprintf("%d instance folders not in the split", n))
		}
	}
	if n := len(r.Consistency.Inconsistent); n > 0 {
		out = append(out, fmt.Sprintf("%d instances' resolved contradicts their own tests", n))
	}
	if n := len(r.Unreadable); n > 0 {
		out = append(out, fmt.Sprintf("%d reports could not be read", n))
	}
	n := 0
	for _, l := range r.LogsUnavailable {
		if !l.Accounted {
			n++
		}
	}
	if n > 0 {
		out = append(out, fmt.Sprintf("%d instance folders have no report and are not in no_logs", n))
	}
	return out
}
