package pathcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestChecks(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"File of a file", File(file), ""},
		{"File of nothing", File(filepath.Join(dir, "nope")), "does not exist"},
		{"File of a folder", File(dir), "is a directory"},
		{"Out in a folder", Out(filepath.Join(dir, "report.json")), ""},
		{"Out on a folder", Out(dir), "is a directory: give a file's path"},
		{"Out in no folder", Out(filepath.Join(dir, "nope", "r.json")), "does not exist"},
		{"Out under a file", Out(filepath.Join(file, "r.json")), "is not a directory"},
		{"relative", File("no-such-file"), "relative paths are taken from kavach's working directory"},
	} {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("%s: %v", tc.name, tc.err)
		case tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error saying %q", tc.name, tc.err, tc.want)
		}
	}
	// Out leaves nothing behind.
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("Out left files: %v", entries)
	}
}

// TestOutput: an output may replace only an output of its kind that
// Kavach wrote; never an input, by any name.
func TestOutput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fixture := write("f.kavach", "(zstd)")
	report := write("r.json", "{\n  \"schema_version\": 1,\n  \"verdict\": \"fixed\"\n}\n")
	page := write("p.html", "<!DOCTYPE html>\n<html>...<footer>"+PageMark+" from the report's evidence</footer></html>\n")
	notes := write("notes.txt", "mine")
	empty := write("empty", "")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fixture, link); err != nil {
		t.Fatal(err)
	}
	inputs := []Input{{"the fixture", fixture}, {"the build", ""}}
	for _, tc := range []struct {
		path string
		kind Kind
		want string
	}{
		{filepath.Join(dir, "new.json"), Report, ""},
		{report, Report, ""},
		{page, Page, ""},
		{empty, Page, ""},
		{fixture, Report, "is the fixture"},
		{link, Page, "is the fixture"},
		{filepath.Join(dir, ".", "f.kavach"), Report, "is the fixture"},
		{notes, Report, "is not a Kavach report"},
		{page, Report, "is not a Kavach report"},
		{report, Page, "is not a Kavach page"},
		{notes, Page, "is not a Kavach page"},
	} {
		err := Output("--out", tc.path, tc.kind, inputs...)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Output(%s, %v) = %v, want %q", tc.path, tc.kind, err, tc.want)
		}
	}
}
