package kavach_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestImportDirection holds the layout's one direction of imports
// (root <- {fixtures, launch} <- {record, replay, variants, invariants} <-
// grade <- grading <- {textreport, example} <- {mcpserver, cmd}; an
// integration imports only the root and launch), so that
// a protocol never leaks into the recorder or the fixture format. Every
// package is listed with what it may import of the project: a new package
// fails this test until its line is written.
func TestImportDirection(t *testing.T) {
	const mod = "github.com/kavach-dev/kavach"
	allowed := map[string][]string{
		"":                   {},
		"fixtures":           {""},
		"launch":             {""},
		"record":             {"", "fixtures", "launch", "replay"}, // replay: a scratch build under the clock library cuts a snapshot
		"replay":             {"", "fixtures", "launch"},
		"variants":           {"", "fixtures"},
		"invariants":         {"", "fixtures"},
		"integrations/redis": {"", "internal/cut", "launch"},
		"integrations/axum":  {"", "internal/cut", "launch"},
		"grade":              {"", "fixtures", "invariants", "launch", "replay", "variants"},
		"recount":            {"grade", "internal/cut", "internal/jsonout"},
		"htmlreport":         {"", "grade", "internal/cut", "recount", "replay"},
		// The use case: grade this fixture with these builds. It lists the
		// integrations; cmd/kavach, mcpserver and example call it.
		"grading": {"", "fixtures", "grade", "integrations/axum", "integrations/redis", "internal/cut", "internal/pathcheck", "invariants", "launch", "record", "replay", "variants"},
		// The text views of grading's results, for cmd/kavach and mcpserver.
		"textreport":           {"", "fixtures", "grade", "grading", "internal/cut", "internal/jsonout", "replay"},
		"mcpserver":            {"", "grade", "grading", "internal/cut", "internal/pathcheck", "textreport"},
		"internal/cut":         {},
		"internal/jsonout":     {},
		"internal/pathcheck":   {},
		"internal/progress":    {"grade"},
		"internal/suggest":     {},
		"internal/buildscript": {},
		"internal/reporoot":    {},
		"internal/loadtest":    {},
		"internal/redissuite":  {},
		"internal/redisbuild":  {"internal/buildscript", "internal/reporoot"},
		"internal/clockbuild":  {"replay"},
		"internal/axumbuild":   {"internal/buildscript", "internal/reporoot"},
		// Test helpers only: a base for fake integrations.
		"internal/integrationtest": {""},
		"internal/gradetest":       {"grade", "invariants"},
		"internal/syncbuf":         {},
		// Tests only (grade's longest end-to-end tests).
		"grade/scenarios":    {},
		"internal/incidents": {"", "fixtures", "integrations/axum", "integrations/redis", "record"},
		"example":            {"", "fixtures", "grade", "grading", "internal/buildscript", "invariants", "record"},
		// The command names no integration: grading lists them.
		"cmd/kavach": {"", "example", "fixtures", "grade", "grading", "htmlreport", "internal/cut", "internal/jsonout", "internal/pathcheck",
			"internal/progress", "internal/suggest", "invariants", "launch", "mcpserver", "record", "recount", "replay", "textreport", "variants"},
		"bench/plainproxy":  {},
		"bench/htmlbig":     {"", "grade", "replay"},
		"bench/scalegen":    {"", "fixtures"},
		"bench/widefixture": {"", "fixtures", "integrations/redis"},
		// A client of Redis only: the go-redis contract's session.
		"examples/upgrade-contracts/goredis": {},
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}:{{join .Imports " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, mod), "/")
		ok, ruled := allowed[rel]
		if !ruled {
			t.Errorf("package %s is not listed: write down what it may import in TestImportDirection", pkg)
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if imp != mod && !strings.HasPrefix(imp, mod+"/") {
				continue
			}
			dep := strings.TrimPrefix(strings.TrimPrefix(imp, mod), "/")
			if !contains(ok, dep) {
				t.Errorf("%s imports %s; the layout allows it only %q", pkg, imp, ok)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestBinaryLinksNoTesting: the shipped kavach command does not link the
// testing package (nor its flags), which test helpers would drag in.
func TestBinaryLinksNoTesting(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./cmd/kavach").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "testing" || strings.HasPrefix(dep, "testing/") {
			t.Errorf("cmd/kavach links %s", dep)
		}
	}
}

// TestBinaryLinksNoRepoRoot: the shipped kavach command finds nothing
// from where it was compiled (internal/reporoot asks runtime.Caller, which
// holds only inside a checkout): kavach grade resolves an example's
// scripts from the example's folder, so an installed binary grades it.
func TestBinaryLinksNoRepoRoot(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./cmd/kavach").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasSuffix(dep, "/internal/reporoot") || strings.HasSuffix(dep, "/internal/incidents") {
			t.Errorf("cmd/kavach links %s, a test helper that finds files from where it was compiled", dep)
		}
	}
}

// TestDocsStandAlone: the project's files refer to nothing outside the
// repository: no relative path that climbs out of it, and no section of a
// design brief it does not hold (the design is docs/design.md). Every
// tracked text file is read (docs, code comments, scripts, examples);
// binary files are skipped.
func TestDocsStandAlone(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git work tree)", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 10 {
		t.Fatalf("git ls-files listed %d files", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
			continue // binary
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, rel := range climbing.FindAllString(line, -1) {
				target := filepath.Join(root, filepath.Dir(f), rel)
				if r, err := filepath.Rel(root, target); err != nil || strings.HasPrefix(r, "..") {
					t.Errorf("%s:%d refers outside the repository (%s): %s", f, i+1, rel, line)
				}
			}
			if brief.MatchString(line) {
				t.Errorf("%s:%d refers to a design brief outside the repository: %s", f, i+1, line)
			}
		}
	}
}

var brief = regexp.MustCompile(`\b(DESIGN|STYLE)(\.md\b| §)`)

// climbing finds relative paths that start by going up a directory.
var climbing = regexp.MustCompile(`(?:\.\./)+[A-Za-z0-9_.-]+`)
