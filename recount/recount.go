// Package recount reads a harness job's Kavach reports (one per trial) and
// answers, apart and never merged: how many of each verdict there are, and
// whether that matches a summary (Recount); whether each report's verdict
// follows from its own evidence (Consistency); and, where the hidden
// tests' reward lies beside a report, how the two graders compare by task
// (Graders). It reads; it grades nothing again.
package recount

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	textcut "github.com/kavach-dev/kavach/internal/cut"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kavach-dev/kavach/grade"
)

// Kinds are the verdict kinds, in the order they are listed.
var Kinds = []string{grade.Fixed, grade.Held, grade.Diverged, grade.StillFailing, grade.InvariantViolated, grade.VariantFailed, grade.Unverified}

// Trial is one report found in the job.
type Trial struct {
	ID      string // the report's folder relative to the job, less a last "verifier"
	Task    string // the trial's name up to "__" (Harbor's TASK__ID), else the fixture's file name
	Report  string // the report's path
	Verdict string // as written in the report
	Kind    string // of the verdict as written in the report ("" if it names none)
	Derived string // as its evidence gives it
	// Hidden is the hidden tests' result from a reward file beside the
	// report: "pass" (reward > 0), "fail", or "" when there is none.
	Hidden string
	// Suite: the report is a suite's; Verdict and Derived are then its
	// headline's, and Fixtures the fixtures whose written verdict their
	// own evidence does not give.
	Suite    bool
	Fixtures []FixtureVerdict
}

// FixtureVerdict is one fixture of a suite's report whose written verdict
// its evidence does not give.
type FixtureVerdict struct {
	Fixture string `json:"fixture"`
	Verdict string `json:"verdict"` // written
	Derived string `json:"derived"` // from the evidence
}

// Unreadable is a file that looked like a report (or a reward) and could
// not be read as one.
type Unreadable struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	// For a report: its trial and task, and the hidden tests' result
	// beside it ("pass", "fail", "" none). A reward file has no trial.
	Trial  string `json:"trial,omitempty"`
	Task   string `json:"-"`
	Hidden string `json:"hidden,omitempty"`
}

// Incomplete is a trial with the hidden tests' reward and no Kavach
// report beside it: Kavach timed out, was interrupted, or never ran.
type Incomplete struct {
	Trial  string `json:"trial"`
	Task   string `json:"task"`
	Dir    string `json:"dir"`
	Hidden string `json:"hidden"` // "pass", "fail", or "" when the reward file is unreadable
}

// Job is every trial under a folder: each report read (Trials), each
// report that could not be read (Unreadable, with a Trial), and each
// trial with a reward and no report (Incomplete). None is left out.
type Job struct {
	Dir        string
	Trials     []Trial
	Unreadable []Unreadable
	Incomplete []Incomplete
}

// Scan reads every Kavach report under dir: any .json file whose top-level
// object has "schema_version", "verdict" and "evidence", or is a suite's
// report ("suite": true, with "reports"), counted by its headline. Others are left
// alone; one of those with an unknown schema version or a broken shape is
// Unreadable, and so is a .json file that is not JSON at all (truncated,
// say) when it names itself a Kavach report: its name holds "kavach", or
// its text "schema_version". A folder with a reward file (reward.txt or
// reward.json) and no report, read or not, is an Incomplete trial. Trials
// are sorted by ID.
func Scan(dir string) (*Job, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	s := &scan{dir: dir, job: &Job{Dir: dir}, perDir: map[string]int{}, rewardDirs: map[string]bool{}}
	if err := filepath.WalkDir(dir, s.visit); err != nil {
		return nil, err
	}
	job := s.job
	for _, f := range s.reports {
		job.Trials = append(job.Trials, s.trial(f))
	}
	s.nameUnreadable()
	s.addIncomplete()
	sort.Slice(job.Trials, func(i, j int) bool { return job.Trials[i].ID < job.Trials[j].ID })
	sort.Slice(job.Incomplete, func(i, j int) bool { return job.Incomplete[i].Trial < job.Incomplete[j].Trial })
	sort.SliceStable(job.Unreadable, func(i, j int) bool { return job.Unreadable[i].Path < job.Unreadable[j].Path })
	return job, nil
}

// Found says whether the job's folder held any Kavach trial: a report
// read or not, or a trial with a reward and no report.
func (j *Job) Found() bool {
	return len(j.Trials) > 0 || len(j.Unreadable) > 0 || len(j.Incomplete) > 0
}

// Open reads dir as `kavach recount` does, both as a harness job of
// Kavach reports (Scan) and as a SWE-bench archive (ScanSWEBench), and
// returns the one it is: the archive when dir holds one, or only
// instance reports that cannot be read; else the job (which may have
// found nothing: Found). A folder that holds both is an error, since
// each must be recounted on its own.
func Open(dir string) (*Job, *SWEArchive, error) {
	job, err := Scan(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("recount: %w", err)
	}
	arch, err := ScanSWEBench(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("recount: %w", err)
	}
	switch {
	case job.Found() && arch.Found():
		return nil, nil, fmt.Errorf("recount: %s holds both Kavach reports (%d) and SWE-bench instance reports (%d); recount each folder on its own",
			dir, len(job.Trials)+len(job.Unreadable), len(arch.Instances)+len(arch.Unreadable))
	case arch.Found() || (!job.Found() && len(arch.Unreadable) > 0):
		return nil, arch, nil
	}
	return job, nil, nil
}

// scan is one Scan of a job's folder: what the walk has found so far.
type scan struct {
	dir        string
	job        *Job
	reports    []foundReport
	unreadable []string       // reports that could not be read: their paths
	perDir     map[string]int // reports, read or not, per folder
	rewardDirs map[string]bool
}

// foundReport is one report read.
type foundReport struct {
	path string
	rep  grade.Report
	// suite is set for a suite's report; rep is then its headline
	// fixture's (or the first's), for the task's name.
	suite *grade.SuiteReport
}

// bad notes a report that could not be read.
func (s *scan) bad(path, reason string) {
	s.job.Unreadable = append(s.job.Unreadable, Unreadable{Path: path, Reason: reason})
	s.unreadable = append(s.unreadable, path)
	s.perDir[filepath.Dir(path)]++
}

// visit looks at one file of the walk: a reward file, a report, or
// another file left alone.
func (s *scan) visit(path string, d fs.DirEntry, err error) error {
	if err != nil {
		return err
	}
	if d.IsDir() {
		return nil
	}
	if d.Name() == "reward.txt" || d.Name() == "reward.json" {
		s.rewardDirs[filepath.Dir(path)] = true
		return nil
	}
	if !strings.HasSuffix(d.Name(), ".json") || strings.HasPrefix(d.Name(), "reward") {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	suite, ok := looksLikeReport(b)
	if !ok {
		if err := json.Unmarshal(b, new(any)); err != nil && namesItselfReport(d.Name(), b) {
			s.bad(path, fmt.Sprintf("not JSON, %d bytes (truncated?): %v", len(b), err))
		}
		return nil
	}
	f, reason := readReport(path, b, suite)
	if reason != "" {
		s.bad(path, reason)
		return nil
	}
	s.reports = append(s.reports, f)
	s.perDir[filepath.Dir(path)]++
	return nil
}

// readReport reads a file that looks like a report (a suite's when suite
// is set); reason says why it cannot be read as one, "" when it can.
func readReport(path string, b []byte, suite bool) (f foundReport, reason string) {
	var err error
	f.path = path
	if suite {
		f.suite = new(grade.SuiteReport)
		err = json.Unmarshal(b, f.suite)
	} else {
		err = json.Unmarshal(b, &f.rep)
	}
	if err != nil {
		return f, err.Error()
	}
	version := f.rep.SchemaVersion
	if suite {
		version = f.suite.SchemaVersion
	}
	if version != grade.SchemaVersion {
		return f, fmt.Sprintf("schema version %d, this Kavach reads %d", version, grade.SchemaVersion)
	}
	if suite {
		if len(f.suite.Reports) == 0 || slices.Contains(f.suite.Reports, nil) {
			return f, "a suite's report with no or an empty fixture report"
		}
		h := f.suite.Headline
		if h < 0 || h >= len(f.suite.Reports) {
			h = 0
		}
		f.rep = *f.suite.Reports[h]
	}
	return f, ""
}

// trial is a report read as a trial: its verdict as written and as its
// evidence gives it, and the hidden tests' result beside it (a reward
// file that cannot be read is listed as Unreadable).
func (s *scan) trial(f foundReport) Trial {
	t := Trial{ID: trialID(s.dir, f.path, s.perDir[filepath.Dir(f.path)] > 1), Report: f.path}
	if f.suite != nil {
		t.Suite = true
		head, parts := grade.DeriveSuite(f.suite)
		t.Verdict, t.Derived = f.suite.Verdict, head.String()
		for i, r := range f.suite.Reports {
			if d := parts[i].String(); d != r.Verdict {
				t.Fixtures = append(t.Fixtures, FixtureVerdict{Fixture: r.Fixture.Path, Verdict: r.Verdict, Derived: d})
			}
		}
	} else {
		parts, _ := grade.Derive(f.rep.Evidence)
		t.Verdict, t.Derived = f.rep.Verdict, parts.String()
	}
	t.Kind = kindOf(t.Verdict)
	t.Task = taskOf(t.ID, f.rep.Fixture.Path)
	var err error
	t.Hidden, err = hiddenBeside(filepath.Dir(f.path))
	if err != nil {
		s.job.Unreadable = append(s.job.Unreadable, Unreadable{Path: filepath.Dir(f.path), Reason: err.Error()})
	}
	return t
}

// nameUnreadable makes each report that could not be read a trial still:
// named, with the hidden result beside it, so that it is counted and
// never vanishes.
func (s *scan) nameUnreadable() {
	for i := range s.job.Unreadable {
		u := &s.job.Unreadable[i]
		if !slices.Contains(s.unreadable, u.Path) {
			continue
		}
		u.Trial = trialID(s.dir, u.Path, s.perDir[filepath.Dir(u.Path)] > 1)
		u.Task = taskOf(u.Trial, "")
		u.Hidden, _ = hiddenBeside(filepath.Dir(u.Path)) // "" when the reward cannot be read
	}
}

// addIncomplete lists each folder with a reward file and no report, read
// or not, as an Incomplete trial.
func (s *scan) addIncomplete() {
	for rd := range s.rewardDirs {
		if s.perDir[rd] > 0 {
			continue
		}
		id := trialID(s.dir, filepath.Join(rd, "reward"), false)
		in := Incomplete{Trial: id, Task: taskOf(id, ""), Dir: rd}
		var err error
		if in.Hidden, err = hiddenBeside(rd); err != nil {
			s.job.Unreadable = append(s.job.Unreadable, Unreadable{Path: rd, Reason: err.Error()})
		}
		s.job.Incomplete = append(s.job.Incomplete, in)
	}
}

// namesItselfReport: a file that is not JSON is taken for a Kavach
// report cut short when its name says so ("kavach" in it: Harbor's
// kavach-report.json) or its text still holds a report's first key.
func namesItselfReport(name string, b []byte) bool {
	return strings.Contains(strings.ToLower(name), "kavach") || bytes.Contains(b, []byte(`"schema_version"`))
}

// kindOf is the kind a verdict string names: "diverged@3" is diverged;
// "" for a string that names no kind.
func kindOf(verdict string) string {
	for _, k := range Kinds {
		if verdict == k || strings.HasPrefix(verdict, k+"@") || strings.HasPrefix(verdict, k+"(") {
			return k
		}
	}
	return ""
}

// looksLikeReport: a JSON object with the keys every report has, or
// every suite's report has ("suite": true and "reports"); suite tells
// which.
func looksLikeReport(b []byte) (suite, ok bool) {
	var keys map[string]json.RawMessage
	if json.Unmarshal(b, &keys) != nil {
		return false, false
	}
	_, a := keys["schema_version"]
	_, v := keys["verdict"]
	_, e := keys["evidence"]
	_, r := keys["reports"]
	suite = string(bytes.TrimSpace(keys["suite"])) == "true" && r
	return suite, a && v && (e || suite)
}

// trialID names a report's trial: its folder relative to the job, less a
// last "verifier" (Harbor's TRIAL/verifier/); with its file name when the
// folder holds several reports.
func trialID(dir, path string, shared bool) string {
	rel, err := filepath.Rel(dir, filepath.Dir(path))
	if err != nil {
		rel = filepath.Dir(path)
	}
	rel = filepath.ToSlash(rel)
	if rel == "verifier" {
		rel = "."
	}
	rel = strings.TrimSuffix(rel, "/verifier")
	if shared {
		if rel == "." {
			return filepath.Base(path)
		}
		return rel + "/" + filepath.Base(path)
	}
	return rel
}

func taskOf(id, fixture string) string {
	first := strings.Split(id, "/")[0]
	if task, _, ok := strings.Cut(first, "__"); ok && task != "" {
		return task
	}
	if fixture != "" {
		return filepath.Base(fixture)
	}
	return first
}

// hiddenBeside reads the hidden tests' reward in dir as Harbor reads it:
// reward.txt's number, else reward.json's "reward". "" when neither is
// there.
func hiddenBeside(dir string) (string, error) {
	if b, err := os.ReadFile(filepath.Join(dir, "reward.txt")); err == nil {
		v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		if err != nil {
			return "", errors.New("reward.txt does not hold a number")
		}
		return passFail(v), nil
	}
	if b, err := os.ReadFile(filepath.Join(dir, "reward.json")); err == nil {
		var r map[string]json.RawMessage
		if err := json.Unmarshal(b, &r); err != nil {
			return "", fmt.Errorf("reward.json: %v", err)
		}
		raw, ok := r["reward"]
		if !ok {
			return "", fmt.Errorf("reward.json has no \"reward\"")
		}
		v, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
		if err != nil {
			return "", errors.New("reward.json: its reward is not a number")
		}
		return passFail(v), nil
	}
	return "", nil
}

// cut shortens s to n bytes for a message, never splitting a character.
func cut(s string, n int) string { return textcut.String(s, n) }

func passFail(reward float64) string {
	if reward > 0 {
		return "pass"
	}
	return "fail"
}

// Count is one verdict kind's count.
type Count struct {
	Kind   string   `json:"kind"`
	Count  int      `json:"count"`
	Trials []string `json:"trials"`
	// With a summary: what it says, and whether that matches.
	Summary *int  `json:"summary,omitempty"`
	Match   *bool `json:"match,omitempty"`
}

// RecountResult is the recount: the verdicts as the reports write them,
// and every trial that gave none.
type RecountResult struct {
	Total  int     `json:"total"` // reports read
	Counts []Count `json:"counts"`
	// Trials are all the job's trials: the reports read, the reports
	// that could not be read, and the trials with a reward and no report.
	Trials int `json:"trials"`
	// UnreadableTrials are the trials whose report could not be read;
	// Incomplete, those with a reward and no report.
	UnreadableTrials []string `json:"unreadable_trials"`
	Incomplete       []string `json:"incomplete"`
	// Matches is set when a summary was compared: every kind's count
	// (and the total, when the summary gives one) agrees.
	Matches *bool `json:"matches,omitempty"`
	// SummaryTotal is the summary's total, when it gives one.
	SummaryTotal *int `json:"summary_total,omitempty"`
	// NoKind are the trials whose written verdict names no kind.
	NoKind []string `json:"no_kind,omitempty"`
}

// Recount counts the verdicts as written in the reports and, given a
// summary (kind -> count; nil: none), compares each count with it.
func (j *Job) Recount(summary map[string]int) RecountResult {
	r := RecountResult{Total: len(j.Trials), UnreadableTrials: []string{}, Incomplete: []string{}}
	for _, u := range j.Unreadable {
		if u.Trial != "" {
			r.UnreadableTrials = append(r.UnreadableTrials, u.Trial)
		}
	}
	for _, in := range j.Incomplete {
		r.Incomplete = append(r.Incomplete, in.Trial)
	}
	r.Trials = r.Total + len(r.UnreadableTrials) + len(r.Incomplete)
	for _, k := range Kinds {
		c := Count{Kind: k, Trials: []string{}}
		for _, t := range j.Trials {
			if t.Kind == k {
				c.Count++
				c.Trials = append(c.Trials, t.ID)
			}
		}
		r.Counts = append(r.Counts, c)
	}
	for _, t := range j.Trials {
		if t.Kind == "" {
			r.NoKind = append(r.NoKind, t.ID)
		}
	}
	if summary == nil {
		return r
	}
	all := true
	for i := range r.Counts {
		c := &r.Counts[i]
		n := summary[c.Kind]
		m := n == c.Count
		c.Summary, c.Match = &n, &m
		all = all && m
	}
	if n, ok := summary["total"]; ok {
		r.SummaryTotal = &n
		all = all && n == r.Total
	}
	r.Matches = &all
	return r
}

// ConsistencyResult is each report's verdict against its own evidence.
type ConsistencyResult struct {
	Consistent   []string       `json:"consistent"`
	Inconsistent []Inconsistent `json:"inconsistent"`
}

// Inconsistent is a report whose written verdict its evidence does not give.
type Inconsistent struct {
	Trial   string `json:"trial"`
	Report  string `json:"report"`
	Verdict string `json:"verdict"` // written
	Derived string `json:"derived"` // from the evidence
	// Fixtures are, for a suite's report, the fixtures whose verdict
	// their evidence does not give.
	Fixtures []FixtureVerdict `json:"fixtures,omitempty"`
}

// Consistency re-derives each report's verdict from its evidence; for a
// suite's report, every fixture's verdict and the headline, as kavach
// verdict does.
func (j *Job) Consistency() ConsistencyResult {
	r := ConsistencyResult{Consistent: []string{}, Inconsistent: []Inconsistent{}}
	for _, t := range j.Trials {
		if t.Derived == t.Verdict && len(t.Fixtures) == 0 {
			r.Consistent = append(r.Consistent, t.ID)
		} else {
			r.Inconsistent = append(r.Inconsistent, Inconsistent{Trial: t.ID, Report: t.Report, Verdict: t.Verdict, Derived: t.Derived, Fixtures: t.Fixtures})
		}
	}
	return r
}

// TaskGraders is one task's two graders, side by side: they agree on a
// trial when the hidden tests pass exactly when Kavach's verdict is green
// (fixed, or held for a contract).
type TaskGraders struct {
	Task        string   `json:"task"`
	Trials      int      `json:"trials"`
	HiddenPass  int      `json:"hidden_pass"`
	KavachFixed int      `json:"kavach_fixed"` // fixed or held: green
	Agree       int      `json:"agree"`
	Disagree    []string `json:"disagree"` // trial ids
	// NoVerdict are the trials with a hidden result and no Kavach verdict:
	// their report could not be read, or there is none (incomplete).
	NoVerdict []string `json:"no_verdict"`
}

// GradersResult is the two-grader table of a job, by task; trials with no
// hidden result beside them are left out (and counted). A task's trials
// are its agreeing, disagreeing and no-verdict ones.
type GradersResult struct {
	Tasks    []TaskGraders `json:"tasks"`
	NoHidden []string      `json:"no_hidden"`
}

// Graders compares the hidden tests and Kavach trial by trial, by task.
// The two are never combined into one score.
func (j *Job) Graders() GradersResult {
	r := GradersResult{Tasks: []TaskGraders{}, NoHidden: []string{}}
	by := map[string]*TaskGraders{}
	var order []string
	task := func(name string) *TaskGraders {
		g := by[name]
		if g == nil {
			g = &TaskGraders{Task: name, Disagree: []string{}, NoVerdict: []string{}}
			by[name] = g
			order = append(order, name)
		}
		g.Trials++
		return g
	}
	noVerdict := func(trial, taskName, hidden string) {
		if hidden == "" {
			return
		}
		g := task(taskName)
		if hidden == "pass" {
			g.HiddenPass++
		}
		g.NoVerdict = append(g.NoVerdict, trial)
	}
	for _, u := range j.Unreadable {
		if u.Trial != "" {
			noVerdict(u.Trial, u.Task, u.Hidden)
		}
	}
	for _, in := range j.Incomplete {
		noVerdict(in.Trial, in.Task, in.Hidden)
	}
	for _, t := range j.Trials {
		if t.Hidden == "" {
			r.NoHidden = append(r.NoHidden, t.ID)
			continue
		}
		g := task(t.Task)
		pass, fixed := t.Hidden == "pass", grade.Green(t.Kind)
		if pass {
			g.HiddenPass++
		}
		if fixed {
			g.KavachFixed++
		}
		if pass == fixed {
			g.Agree++
		} else {
			g.Disagree = append(g.Disagree, t.ID)
		}
	}
	sort.Strings(order)
	for _, name := range order {
		g := by[name]
		sort.Strings(g.NoVerdict)
		r.Tasks = append(r.Tasks, *g)
	}
	return r
}

// ParseSummary reads a summary of a job's verdicts: a JSON object of
// counts by verdict kind, {"fixed": 3, "diverged": 1, ...}, optionally
// with "total"; or that object under "counts"; or `kavach recount --json`'s
// own output, whose "recount" holds a list of counts.
func ParseSummary(b []byte) (map[string]int, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if rc, ok := top["recount"]; ok {
		var r RecountResult
		if err := json.Unmarshal(rc, &r); err != nil {
			return nil, fmt.Errorf("recount: %w", err)
		}
		if r.Total < 0 {
			return nil, fmt.Errorf("recount: total %d is not a count", r.Total)
		}
		m := map[string]int{"total": r.Total}
		for _, c := range r.Counts {
			if kindOf(c.Kind) != c.Kind || c.Kind == "" {
				return nil, fmt.Errorf("recount: %q is not a verdict kind (%s)", c.Kind, strings.Join(Kinds, ", "))
			}
			if c.Count < 0 {
				return nil, fmt.Errorf("recount: %q: %d is not a count", c.Kind, c.Count)
			}
			m[c.Kind] = c.Count
		}
		return m, nil
	}
	if c, ok := top["counts"]; ok {
		top = nil
		if err := json.Unmarshal(c, &top); err != nil {
			return nil, fmt.Errorf("counts: %w", err)
		}
	}
	known := map[string]bool{"total": true}
	for _, k := range Kinds {
		known[k] = true
	}
	m := map[string]int{}
	for k, raw := range top {
		if !known[k] {
			return nil, fmt.Errorf("%q is not a verdict kind (%s) or total", k, strings.Join(Kinds, ", "))
		}
		var n int
		if err := json.Unmarshal(raw, &n); err != nil || n < 0 {
			return nil, fmt.Errorf("%q: %s is not a count", k, raw)
		}
		m[k] = n
	}
	return m, nil
}
