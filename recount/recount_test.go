package recount

import (
	"strings"
	"testing"
)

func TestParseSummary(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]int
		err  string
	}{
		{`{"fixed": 2, "diverged": 1, "total": 3}`, map[string]int{"fixed": 2, "diverged": 1, "total": 3}, ""},
		{`{"counts": {"unverified": 4}}`, map[string]int{"unverified": 4}, ""},
		{`{"recount": {"total": 2, "counts": [{"kind": "fixed", "count": 2, "trials": ["a", "b"]}]}}`, map[string]int{"fixed": 2, "total": 2}, ""},
		{`{"fixd": 2}`, nil, `"fixd" is not a verdict kind`},
		{`{"fixed": -1}`, nil, "not a count"},
		{`{"fixed": "2"}`, nil, "not a count"},
		{`[1, 2]`, nil, "not a JSON object"},
	} {
		got, err := ParseSummary([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSummary(%s): %v, want an error saying %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("ParseSummary(%s) = %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("ParseSummary(%s)[%s] = %d, want %d", tc.in, k, got[k], v)
			}
		}
	}
}

func TestKindOf(t *testing.T) {
	for in, want := range map[string]string{
		"fixed": "fixed", "diverged@3": "diverged", "still_failing@5": "still_failing",
		"invariant_violated(ttl)@7": "invariant_violated", "variant_failed(4)@9": "variant_failed",
		"unverified(below-floor: x)": "unverified", "fixedish": "", "": "",
	} {
		if got := kindOf(in); got != want {
			t.Errorf("kindOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParseSummary: any bytes give a summary of known kinds and counts
// of 0 or more, or an error; never a panic.
func FuzzParseSummary(f *testing.F) {
	f.Add([]byte(`{"fixed": 2, "total": 2}`))
	f.Add([]byte(`{"counts": {"diverged": 1}}`))
	f.Add([]byte(`{"recount": {"total": 1, "counts": [{"kind": "fixed", "count": 1}]}}`))
	f.Add([]byte(`{"recount": 7}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseSummary(b)
		if err != nil {
			return
		}
		for k, v := range m {
			if kindOf(k) == "" && k != "total" {
				t.Errorf("key %q is not a kind", k)
			}
			if v < 0 && k != "total" {
				t.Errorf("%s: count %d", k, v)
			}
		}
	})
}
