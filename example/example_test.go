package example

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoad reads every example the repository ships, and refuses broken ones.
func TestLoad(t *testing.T) {
	dirs, _ := filepath.Glob("../examples/*/example.json")
	if len(dirs) < 3 {
		t.Fatalf("found %d examples, want the three shipped", len(dirs))
	}
	for _, f := range dirs {
		ex, err := Load(filepath.Dir(f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(ex.Candidates) == 0 || ex.HiddenTest == "" {
			t.Errorf("%s: %+v", f, ex)
		}
	}
	for name, tc := range map[string]struct{ json, want string }{
		"unknown field": {`{"build": "b", "client": "c", "hidden_test": "h", "candidates": [{"name": "x"}], "hiden": 1}`, `unknown field "hiden"`},
		"no candidates": {`{"build": "b", "client": "c", "hidden_test": "h"}`, "build, client, hidden_test and candidates are required"},
		"not JSON":      {`build: b`, "example.json"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "example.json"), []byte(tc.json), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("a folder with no example.json loaded")
	}
}
