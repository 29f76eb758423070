// Package htmlreport renders Kavach's reports as pages a person can look
// at: one fixture's report, a suite's, or a harness job's recount. A page
// is one self-contained HTML file, built with html/template: its styles
// are inline, its pictures are SVG drawn here, and it has no script (its
// filters are form controls and CSS), so that opening it fetches nothing
// and it prints as it shows. It reads the report's evidence and shows it;
// it judges nothing again (the verdict shown is the report's).
//
// The sections, in order (docs/diff.md, "The HTML report"): the verdict
// and what it means; the timeline of the incident; the headline finding;
// the failing step, when the finding is elsewhere; every step; the
// variants; the invariants; the builds, fixture and options.
package htmlreport

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/recount"
)

//go:embed page.html.tmpl page.css
var files embed.FS

var pageTemplate = template.Must(template.New("page.html.tmpl").Funcs(template.FuncMap{
	"css": func() template.CSS {
		b, _ := files.ReadFile("page.css")
		return template.CSS(b)
	},
	"f1":   func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"join": strings.Join,
	// multiline: a text with lines of its own (a crash log), shown as they are.
	"multiline": func(s string) bool { return strings.Contains(strings.TrimRight(s, "\n"), "\n") },
}).ParseFS(files, "page.html.tmpl"))

// page is what the template renders.
type page struct {
	Title        string
	Verdict      string
	VerdictClass string // green, amber or red
	Meaning      string
	Suite        bool
	Sections     []*section
	Job          *jobView
	SWE          *sweView
}

// Report writes the page of one fixture's report.
func Report(w io.Writer, rep *grade.Report) error {
	if rep == nil {
		return errors.New("no report")
	}
	s := buildSection(rep, "s0-", false)
	p := &page{Title: "kavach: " + rep.Verdict + " " + filepath.Base(rep.Fixture.Path), Verdict: rep.Verdict,
		VerdictClass: s.VerdictClass, Meaning: s.Meaning, Sections: []*section{s}}
	return execute(w, p)
}

// Suite writes the page of a suite's report: the suite's headline, then
// one section per fixture, in argument order.
func Suite(w io.Writer, s *grade.SuiteReport) error {
	if s == nil {
		return errors.New("no report")
	}
	p := &page{Title: "kavach: " + s.Verdict + " (a suite of " + fmt.Sprint(len(s.Reports)) + ")", Verdict: s.Verdict,
		VerdictClass: verdictClass(s.Parts.Kind), Suite: true}
	p.Meaning = suiteMeaning(s)
	for i, r := range s.Reports {
		if r == nil {
			continue
		}
		sec := buildSection(r, fmt.Sprintf("s%d-", i), true)
		sec.Headline = i == s.Headline
		p.Sections = append(p.Sections, sec)
	}
	return execute(w, p)
}

// Job writes the page of a harness job's recount (kavach recount): the
// counts, each report against its own evidence, and the two graders by
// task. summary is the summary's counts to compare with, or nil.
func Job(w io.Writer, job *recount.Job, summary map[string]int) error {
	if job == nil {
		return errors.New("no job")
	}
	j := buildJob(job, summary)
	p := &page{Title: "kavach recount: " + job.Dir, Verdict: j.Headline, VerdictClass: j.Class, Meaning: j.Meaning, Job: j}
	return execute(w, p)
}

func execute(w io.Writer, p *page) error {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return fmt.Errorf("render page: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// Doc is a report file read by Decode: one fixture's report, or a suite's.
type Doc struct {
	Report *grade.Report
	Suite  *grade.SuiteReport
}

// Render writes the page of a decoded report.
func (d Doc) Render(w io.Writer) error {
	if d.Suite != nil {
		return Suite(w, d.Suite)
	}
	return Report(w, d.Report)
}

// Decode reads the bytes of a report written by `kavach diff` (--out or
// --json): one fixture's, or a suite's. Anything else, or a schema
// version this Kavach does not read, is an error saying which.
func Decode(b []byte) (Doc, error) {
	var probe struct {
		SchemaVersion *int            `json:"schema_version"`
		Suite         bool            `json:"suite"`
		Evidence      json.RawMessage `json:"evidence"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return Doc{}, fmt.Errorf("not a kavach diff report: %w", err)
	}
	if probe.SchemaVersion == nil || (!probe.Suite && probe.Evidence == nil) {
		return Doc{}, errors.New("not a kavach diff report: it has no schema_version and evidence")
	}
	if *probe.SchemaVersion != grade.SchemaVersion {
		return Doc{}, fmt.Errorf("schema version %d, this Kavach reads %d", *probe.SchemaVersion, grade.SchemaVersion)
	}
	if probe.Suite {
		var s grade.SuiteReport
		if err := json.Unmarshal(b, &s); err != nil {
			return Doc{}, fmt.Errorf("not a kavach suite report: %w", err)
		}
		for i, r := range s.Reports {
			if r == nil {
				return Doc{}, fmt.Errorf("suite report: fixture %d has no report", i+1)
			}
		}
		return Doc{Suite: &s}, nil
	}
	var r grade.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return Doc{}, fmt.Errorf("not a kavach diff report: %w", err)
	}
	return Doc{Report: &r}, nil
}

// Open reads what `kavach report` makes a page of and returns the page's
// renderer: a report written by `kavach diff` (Decode), or a directory
// read as a harness job, as `kavach recount` does (Job), its counts
// compared with summaryFile's ("" for none, recount.ReadSummary).
func Open(path, summaryFile string) (func(io.Writer) error, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	if st.IsDir() {
		summary, err := recount.ReadSummary(summaryFile)
		if err != nil {
			return nil, err
		}
		job, err := recount.Scan(path)
		if err != nil {
			return nil, fmt.Errorf("read job: %w", err)
		}
		if !job.Found() {
			return nil, fmt.Errorf("read job: no Kavach reports under %s", path)
		}
		return func(w io.Writer) error { return Job(w, job, summary) }, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	doc, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("report %s: %w", path, err)
	}
	return doc.Render, nil
}

// WriteFile writes a page to path whole or not at all: it renders into
// memory, writes a temporary file beside path and renames it, so that a
// failure leaves no partial page (and an earlier page at path as it was).
func WriteFile(path string, render func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = tmp.Write(buf.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
