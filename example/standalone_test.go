package example

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An example's build script and patches are found from the example's
// folder, as given on the command line, and from nothing else: not the
// repository kavach was compiled in, not the working directory's
// ancestors. So an installed kavach grades an example anywhere. The
// example here lives in a temporary folder, with a build script of its
// own that prints the build it made and writes down the patches it got.
func TestBuildFindsScriptsFromTheExampleFolder(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "ex")
	if err := os.MkdirAll(filepath.Join(dir, "candidates"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd)
printf '%s\n' "$@" > "$here/patches-given"
: > "$here/server"
printf '%s\n' "$here/server"
`
	for name, body := range map[string]string{"build.sh": script, "bug.patch": "", "candidates/fix.patch": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ex := &Example{Build: "build.sh", Old: []string{"bug.patch"}}
	// From another folder, the example named by a relative path.
	t.Chdir(base)
	bin, err := ex.build("ex", &Candidate{Name: "fix", Patch: "candidates/fix.patch"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "server"); bin != want {
		t.Errorf("build: %s, want %s", bin, want)
	}
	got, err := os.ReadFile(filepath.Join(dir, "patches-given"))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "bug.patch") + "\n" + filepath.Join(dir, "candidates/fix.patch") + "\n"
	if string(got) != want {
		t.Errorf("the script got patches\n%s\nwant\n%s", got, want)
	}
	// A script the example names but does not hold is an error that says
	// so, not a script found elsewhere.
	ex.Build = "scripts/redis-build.sh"
	if _, err := ex.build("ex", nil); err == nil || !strings.Contains(err.Error(), "redis-build.sh") {
		t.Errorf("a missing script: %v", err)
	}
}
