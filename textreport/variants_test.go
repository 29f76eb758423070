package textreport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/grading"
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

func TestRanVariantsPrint(t *testing.T) {
	var empty bytes.Buffer
	if err := RanVariants(&empty, &grading.RanVariants{}); err != nil || empty.String() != "K  KIND  RESULT  DESCRIPTION\n" {
		t.Errorf("no variants: %q, %v", empty.String(), err)
	}
	r := &grading.RanVariants{List: []grade.VariantEvidence{{K: 1, Kind: "k", Kept: true, FailedStep: 2, Description: "d"}}}
	var b bytes.Buffer
	if err := RanVariants(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "failed@2") || !strings.Contains(b.String(), "KIND  VARIANTS  REPRODUCED  HANDLED  FAILED") {
		t.Errorf("printed:\n%s", b.String())
	}
}
