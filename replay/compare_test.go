package replay

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
)

func result(n int, out ...any) StepResult {
	return StepResult{N: n, Ran: true, Outcome: kavach.Outcome{Kind: kavach.OK}, Output: out}
}

func paths(diffs []Diff) string {
	var p []string
	for _, d := range diffs {
		p = append(p, d.Path+"="+d.Want+">"+d.Got)
	}
	return strings.Join(p, " ")
}

func TestCompareFinestGrain(t *testing.T) {
	metrics := func(requests, other string) map[string]any {
		return map[string]any{"status": int64(200), "body": "# HELP requests_total Requests seen\nrequests_total " + requests + "\nitems_total " + other + "\n"}
	}
	for _, tc := range []struct {
		why       string
		want, got any
		diffs     string
	}{
		{"equal trees", []any{"a", int64(1)}, []any{"a", int64(1)}, ""},
		{"one number in one line of a text body is that token", metrics("4", "2"), metrics("5", "2"),
			`reply[0].body:2:2="4">"5"`},
		{"a line of another shape is the line", metrics("4", "2"), metrics("4 extra", "2"),
			`reply[0].body:2="requests_total 4">"requests_total 4 extra"`},
		{"a JSON field by path", map[string]any{"a": map[string]any{"b": int64(1), "c": "x"}}, map[string]any{"a": map[string]any{"b": int64(2), "c": "x"}},
			`reply[0].a.b=1>2`},
		{"a missing map key", map[string]any{"a": int64(1)}, map[string]any{}, `reply[0].a=1>(missing)`},
		{"an element inserted in a list is that element only", []any{"a", "b", "c", "d"}, []any{"a", "b", "x", "c", "d"},
			`reply[0][2]=(missing)>"x"`},
		{"an element deleted", []any{"a", "b", "c", "d"}, []any{"a", "c", "d"}, `reply[0][1]="b">(missing)`},
		{"changed in place", []any{"a", "b", "c"}, []any{"a", "B", "c"}, `reply[0][1]="b">"B"`},
		{"a type change", []any{int64(1)}, []any{"1"}, `reply[0][0]=1>"1"`},
		{"<, > and & as themselves, not JSON's HTML escapes", []any{[]any{"<b>&"}}, []any{[]any{"<i>"}}, `reply[0][0][0]="<b>&">"<i>"`},
	} {
		got := paths(Compare(result(1, tc.want), result(1, tc.got)))
		if got != tc.diffs {
			t.Errorf("%s: diffs %s, want %s", tc.why, got, tc.diffs)
		}
	}
}

func TestNoiseIsOnlyTheDifferingToken(t *testing.T) {
	// A metrics page whose request counter moved between the recording and
	// the old build's replay: the counter's token is noise, nothing else.
	page := func(requests, items string) StepResult {
		return result(3, map[string]any{"body": "requests_total " + requests + "\nitems_total " + items + "\n"})
	}
	recorded := []StepResult{result(1, "x"), result(2, "y"), page("4", "2")}
	old := &Trace{Steps: []StepResult{result(1, "x"), result(2, "y"), page("5", "2")}}
	noise := FindNoise(recorded, 0, old)
	seen := noise.Seen(recorded, old)
	if len(seen) != 1 || seen[0].Path != "reply[0].body:1:2" || strings.Join(seen[0].Values, ",") != `"4","5"` {
		t.Fatalf("noise %+v, want the counter's token with values 4 and 5", seen)
	}
	// A new build whose counter differs again: noise. One whose items line
	// changed: a difference that counts.
	if count, _ := noise.Split(Compare(recorded[2], page("9", "2"))); len(count) != 0 {
		t.Errorf("counter moved: counted %v", count)
	}
	if count, _ := noise.Split(Compare(recorded[2], page("4", "3"))); paths(count) != `reply[0].body:2:2="2">"3"` {
		t.Errorf("items changed: counted %v, want the items token", paths(count))
	}
	// Skipped before diffing: no difference reported inside a noise path.
	skip := func(p string) bool { return noise.Covers(3, p) }
	if d := CompareSkipping(recorded[2], page("9", "2"), skip); len(d) != 0 {
		t.Errorf("CompareSkipping reported %v inside noise", d)
	}
}

func BenchmarkCompareLargeEqual(b *testing.B) {
	// A COMMAND DOCS-sized reply: equal trees cost one walk.
	var docs []any
	for i := 0; i < 240; i++ {
		docs = append(docs, fmt.Sprintf("cmd%d", i), map[string]any{"summary": "does things", "since": "1.0.0",
			"arguments": []any{map[string]any{"name": "key", "type": "key"}, map[string]any{"name": "value", "type": "string"}}})
	}
	a, c := result(1, docs), result(1, docs)
	for b.Loop() {
		Compare(a, c)
	}
}
