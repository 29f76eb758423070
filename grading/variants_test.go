package grading

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportVariantsBadInput(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"notjson.json": "{",
		"schema.json":  `{"schema_version": 99999}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReportVariants(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err %v, want one naming the report", name, err)
		}
	}
	if _, err := ReportVariants(filepath.Join(dir, "missing.json")); err == nil || !strings.HasPrefix(err.Error(), "read report: ") {
		t.Errorf("missing report: err %v", err)
	}
}
