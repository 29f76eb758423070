package record

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCutNames: the cuts are a directory's fixtures, not its hidden files
// (a cut being written) nor other files.
func TestCutNames(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"20261205T160414.389Z.kavach", ".x.kavach", "notes.txt", PidFile} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := CutNames(dir)
	if len(got) != 1 || !got["20261205T160414.389Z.kavach"] {
		t.Errorf("CutNames = %v, want the one cut", got)
	}
}

// TestClearLeftovers: what a killed recorder left (segments, a cut's
// temporary file, the pid file) goes; the cuts and other files stay.
func TestClearLeftovers(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".segments-123", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a.kavach", ".a.kavach.tmp", PidFile, "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ClearLeftovers(dir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if strings.Join(left, " ") != "a.kavach notes.txt" {
		t.Errorf("left %v, want a.kavach notes.txt", left)
	}
}

// TestRunningRecorder: no pid file, one that holds no process id, and
// one naming this very process are no running recorder.
func TestRunningRecorder(t *testing.T) {
	dir := t.TempDir()
	if pid, ok := RunningRecorder(dir); ok {
		t.Errorf("no pid file: recorder %d", pid)
	}
	for _, s := range []string{"nope\n", "-4\n", strconv.Itoa(os.Getpid()) + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, PidFile), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if pid, ok := RunningRecorder(dir); ok {
			t.Errorf("pid file %q: recorder %d", s, pid)
		}
	}
}

// TestAskCutRefused: a directory with no recorder's pid file, and a pid
// file that holds no process id, are refused saying so.
func TestAskCutRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := AskCut(dir, time.Second); err == nil || !strings.Contains(err.Error(), "no always-on recording runs there (no "+PidFile+")") {
		t.Errorf("AskCut of a directory with no pid file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, PidFile), []byte("nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := AskCut(dir, time.Second); err == nil || !strings.Contains(err.Error(), "does not hold a process id") {
		t.Errorf("AskCut of a pid file with no process id: %v", err)
	}
}
