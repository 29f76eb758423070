package jsonout

import (
	"bytes"
	"strings"
	"testing"
)

// TestPrintJSONKeepsAngles: --json output writes "<", ">" and "&" as
// themselves, not as JSON's HTML escapes (\u003c), which a person or an
// agent reading it must decode. (Moved here from cmd/kavach with Print.)
func TestPrintJSONKeepsAngles(t *testing.T) {
	var b bytes.Buffer
	if err := Print(&b, map[string]string{"body": "<p>a & b</p>"}); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, `"<p>a & b</p>"`) || strings.Contains(got, `\u00`) {
		t.Errorf("Print: %s", got)
	}
	if want := "{\n  \"body\": \"<p>a & b</p>\"\n}\n"; b.String() != want {
		t.Errorf("Print = %q, want %q (indented, one newline)", b.String(), want)
	}
	b.Reset()
	if err := Encoder(&b).Encode([]string{"<x>"}); err != nil {
		t.Fatal(err)
	}
	if want := "[\"<x>\"]\n"; b.String() != want {
		t.Errorf("Encoder = %q, want %q", b.String(), want)
	}
}
