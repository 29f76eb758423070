package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPrintJSONKeepsAngles: --json output writes "<", ">" and "&" as
// themselves, not as JSON's HTML escapes (\u003c), which a person or an
// agent reading it must decode.
func TestPrintJSONKeepsAngles(t *testing.T) {
	var b bytes.Buffer
	if err := printJSON(&b, map[string]string{"body": "<p>a & b</p>"}); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, `"<p>a & b</p>"`) || strings.Contains(got, `\u00`) {
		t.Errorf("printJSON: %s", got)
	}
}
