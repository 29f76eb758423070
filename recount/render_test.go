package recount

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFiles: no file is no summary or split; a missing or bad file
// is an error that names it.
func TestReadFiles(t *testing.T) {
	if s, err := ReadSummary(""); s != nil || err != nil {
		t.Errorf("ReadSummary(\"\") = %v, %v", s, err)
	}
	if s, err := ReadSWESummary(""); s != nil || err != nil {
		t.Errorf("ReadSWESummary(\"\") = %v, %v", s, err)
	}
	if s, err := ReadSplit(""); s != nil || err != nil {
		t.Errorf("ReadSplit(\"\") = %v, %v", s, err)
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func(string) error{
		"summary":     func(f string) error { _, err := ReadSummary(f); return err },
		"swe summary": func(f string) error { _, err := ReadSWESummary(f); return err },
		"split":       func(f string) error { _, err := ReadSplit(f); return err },
	} {
		if err := read(missing); err == nil || !strings.HasPrefix(err.Error(), "read ") {
			t.Errorf("%s, missing file: %v", name, err)
		}
		if err := read(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s, bad file: %v, want an error naming it", name, err)
		}
	}
	good := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(good, []byte(`{"fixed": 2, "total": 2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := ReadSummary(good); err != nil || s["fixed"] != 2 {
		t.Errorf("ReadSummary(good) = %v, %v", s, err)
	}
}
