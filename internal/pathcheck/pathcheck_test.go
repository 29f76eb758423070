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
