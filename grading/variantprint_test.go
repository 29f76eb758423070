package grading

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/grade"
)

func TestVariantResult(t *testing.T) {
	for _, c := range []struct {
		v    grade.VariantEvidence
		want string
	}{
		{grade.VariantEvidence{Regression: true}, "not-kept(old build failed)"},
		{grade.VariantEvidence{}, "not-kept(old build did not fail)"},
		{grade.VariantEvidence{Kept: true, Skipped: true}, "skipped"},
		{grade.VariantEvidence{Kept: true, FailedStep: 3}, "failed@3"},
		{grade.VariantEvidence{Kept: true}, "passed"},
	} {
		if got := VariantResult(c.v); got != c.want {
			t.Errorf("VariantResult(%+v) = %q, want %q", c.v, got, c.want)
		}
	}
}

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

func TestRanVariantsPrint(t *testing.T) {
	var empty bytes.Buffer
	if err := (&RanVariants{}).Print(&empty); err != nil || empty.String() != "K  KIND  RESULT  DESCRIPTION\n" {
		t.Errorf("no variants: %q, %v", empty.String(), err)
	}
	r := &RanVariants{List: []grade.VariantEvidence{{K: 1, Kind: "k", Kept: true, FailedStep: 2, Description: "d"}}}
	var b bytes.Buffer
	if err := r.Print(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "failed@2") || !strings.Contains(b.String(), "KIND  VARIANTS  REPRODUCED  HANDLED  FAILED") {
		t.Errorf("printed:\n%s", b.String())
	}
}
