package invariants

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func str(s string) *string { return &s }

// strlenSteps: SET then STRLEN, twice; the second STRLEN answers wrong.
func strlenSteps() []Step {
	return []Step{
		{N: 1, Ran: true, Time: t0, Request: map[string]any{"command": "SET", "args": []any{"k", "hello"}}, Writes: []string{"k"}, Sets: str("hello"), Replies: []any{"OK"}, Outcome: "ok"},
		{N: 2, Ran: true, Time: t0.Add(time.Second), Request: map[string]any{"command": "STRLEN", "args": []any{"k"}}, Replies: []any{int64(5)}, Outcome: "ok"},
		{N: 3, Ran: true, Time: t0.Add(2 * time.Second), Request: map[string]any{"command": "SET", "args": []any{"k", "hello world!"}}, Writes: []string{"k"}, Sets: str("hello world!"), Replies: []any{"OK"}, Outcome: "ok"},
		{N: 4, Ran: true, Time: t0.Add(3 * time.Second), Request: map[string]any{"command": "STRLEN", "args": []any{"k"}}, Replies: []any{int64(11)}, Outcome: "ok"},
		{N: 5, Ran: true, Time: t0.Add(4 * time.Second), Request: map[string]any{"command": "STRLEN", "args": []any{"nokey"}}, Replies: []any{int64(0)}, Outcome: "ok"},
	}
}

const strlenInv = `# STRLEN answers the length of the value last set.
name: strlen-matches
description: STRLEN is the length of the value last SET
when: req.command == "STRLEN"
check: lastSet(req.args[0]) == null
         ? reply == 0
         : reply == size(lastSet(req.args[0]))
`

func TestCheckFindsTheWrongAnswer(t *testing.T) {
	s, err := Parse("strlen.inv", strlenInv)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Check(strlenSteps())
	if len(r) != 1 || r[0].Held || r[0].FirstStep != 4 || len(r[0].Violations) != 1 {
		t.Fatalf("results = %+v, want strlen-matches violated at step 4 only", r)
	}
	if !strings.Contains(r[0].Message, "STRLEN is the length of the value last SET") {
		t.Errorf("message %q lacks the description", r[0].Message)
	}
	// Fixed: the answer is right, the invariant holds.
	steps := strlenSteps()
	steps[3].Replies = []any{int64(12)}
	if r := s.Check(steps); !r[0].Held {
		t.Errorf("held = false on right answers: %+v", r)
	}
}

func TestHistoryAndTime(t *testing.T) {
	s, err := Parse("t.inv", `name: writes-before-reads
check: req.command != "STRLEN" || steps.exists(p, p.req.command == "SET")

name: quick
when: req.command == "STRLEN" && lastWrite(req.args[0]).found
check: time - lastWrite(req.args[0]).time < duration("1s")

name: steps-counted
check: size(steps) == step - 1
`)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Check(strlenSteps())
	if !r[0].Held || !r[2].Held {
		t.Errorf("results %+v", r)
	}
	// Each STRLEN comes a full second after its SET: not quicker than 1s.
	// The STRLEN of a key never written is not checked (when).
	if r[1].Held || r[1].FirstStep != 2 || len(r[1].Violations) != 2 || r[1].Violations[1] != 4 {
		t.Errorf("quick = %+v, want violated at steps 2 and 4", r[1])
	}
}

func TestCompileErrorsNamePositions(t *testing.T) {
	for _, tc := range []struct {
		src       string
		line, col int
		msg       string
	}{
		{"name: a\ncheck: req.command ==\n", 2, 22, "Syntax error"},
		{"name: a\ncheck: true\n\nname: b\nwhen: nosuchvar > 1\ncheck: true\n", 5, 7, "undeclared reference to 'nosuchvar'"},
		{"name: a\ncheck: step + 1\n", 2, 8, "want bool"},
		{"name: a\n", 1, 1, "has no check"},
		{"check: true\n", 1, 1, "without a name"},
		{"name: a b\ncheck: true\n", 1, 7, "use letters"},
		{"name: a\ncheck: true\n\nname: a\ncheck: true\n", 4, 7, "declared twice"},
		{"nme: a\n", 1, 1, "want \"name:\""},
		{"", 1, 1, "no invariants"},
		{"name: a\ncheck: true &&\n  (step >\n", 3, 10, "Syntax error"},
	} {
		_, err := Parse("x.inv", tc.src)
		var ce *CompileError
		if !errors.As(err, &ce) {
			t.Errorf("%q: err = %v, want a CompileError", tc.src, err)
			continue
		}
		if ce.File != "x.inv" || ce.Line != tc.line || ce.Column != tc.col || !strings.Contains(ce.Msg, tc.msg) {
			t.Errorf("%q: %v, want x.inv:%d:%d: ...%s...", tc.src, ce, tc.line, tc.col, tc.msg)
		}
	}
}

func TestCostLimitStopsRunaways(t *testing.T) {
	// An expression that would take forever (a comprehension over a huge
	// list made in the expression) fails its step instead of hanging.
	s, err := Parse("slow.inv", `name: slow
check: [1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, [1,2,3,4,5,6,7,8,9,10].all(g, a+b+c+d+e+f+g > 0)))))))
`)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := s.Check(strlenSteps()[:1])
	// The cost limit stops it (on a loaded machine the one-second time
	// limit may come first): either way the step is not evaluable, and
	// the message says why.
	if len(r[0].NotEvaluable) != 1 || !(strings.Contains(r[0].NotEvaluableMessage, "cost") || strings.Contains(r[0].NotEvaluableMessage, "deadline exceeded")) {
		t.Errorf("result %+v, want the step not evaluable for exceeding the cost limit (or, under load, the time limit)", r[0])
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
}

func TestNotEvaluableIsNoViolation(t *testing.T) {
	// GET of a missing key answers nil: "reply.startsWith" meets null, a
	// "no such overload" error. That says nothing about the build: the
	// step is not evaluable, never a violation.
	s, err := Parse("nil.inv", `name: greeting
when: req.command == "GET"
check: reply.startsWith("hello")
`)
	if err != nil {
		t.Fatal(err)
	}
	steps := []Step{
		{N: 1, Ran: true, Request: map[string]any{"command": "GET", "args": []any{"k"}}, Replies: []any{"hello world"}, Outcome: "ok"},
		{N: 2, Ran: true, Request: map[string]any{"command": "GET", "args": []any{"missing"}}, Replies: []any{nil}, Outcome: "ok"},
		{N: 3, Ran: true, Request: map[string]any{"command": "GET", "args": []any{"k"}}, Replies: []any{"bye"}, Outcome: "ok"},
	}
	r := s.Check(steps)[0]
	if r.Held || r.FirstStep != 3 || len(r.Violations) != 1 {
		t.Errorf("result %+v: want violated at step 3 only", r)
	}
	if len(r.NotEvaluable) != 1 || r.NotEvaluable[0] != 2 || !strings.Contains(r.NotEvaluableMessage, "not evaluable: no such overload") ||
		!strings.HasSuffix(r.NotEvaluableMessage, "at step 2") {
		t.Errorf("not evaluable %v %q: want step 2, no such overload", r.NotEvaluable, r.NotEvaluableMessage)
	}
}

func TestExcept(t *testing.T) {
	s, err := Parse("x.inv", `name: idle-bound
except: clock-back, twice
check: false

name: always
check: false
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Invariants[0].Except; len(got) != 2 || got[0] != "clock-back" || got[1] != "twice" {
		t.Fatalf("except = %q", got)
	}
	r := s.CheckVariant(strlenSteps()[:1], "clock-back")
	if !r[0].Excepted || !r[0].Held || r[1].Excepted || r[1].Held {
		t.Errorf("on a clock-back variant: %+v, want idle-bound excepted, always violated", r)
	}
	if r := s.CheckVariant(strlenSteps()[:1], "clock-forward"); r[0].Excepted || r[0].Held {
		t.Errorf("on a clock-forward variant: %+v, want idle-bound checked", r[0])
	}
	var ce *CompileError
	if _, err := Parse("x.inv", "name: a\nexcept: clock-sideways\ncheck: true\n"); !errors.As(err, &ce) || ce.Line != 2 || !strings.Contains(ce.Msg, `"clock-sideways"`) {
		t.Errorf("unknown kind: %v, want an error at line 2 naming it", err)
	}
}

func TestExtensions(t *testing.T) {
	// CEL's extensions: strings, lists, math, cel.bind.
	s, err := Parse("ext.inv", `name: strings
check: "a,b,c".split(",").size() == 3 && "Hello".lowerAscii() == "hello" && "x-%d".format([7]) == "x-7"

name: lists
check: [3, 1, 2].sort() == [1, 2, 3] && [[1], [2, 3]].flatten() == [1, 2, 3] && lists.range(3) == [0, 1, 2]

name: math
check: math.greatest(1, 5, 3) == 5 && math.abs(-4) == 4

name: bind
check: cel.bind(n, size(req.args), n == 2)
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.Check(strlenSteps()[:1]) {
		if !r.Held || len(r.NotEvaluable) > 0 {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
}

func TestDocExamplesCompile(t *testing.T) {
	// Every invariant shown in docs/invariants.md compiles.
	b, err := os.ReadFile("../docs/invariants.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(b), "```")
	n := 0
	for i := 1; i < len(blocks); i += 2 {
		if !strings.Contains(blocks[i], "name:") || strings.Contains(blocks[i], "kavach ") {
			continue
		}
		if _, err := Parse("docs/invariants.md", strings.TrimPrefix(blocks[i], "\n")); err != nil {
			t.Errorf("block %d: %v\n%s", i/2+1, err, blocks[i])
		}
		n++
	}
	if n < 5 {
		t.Errorf("found %d invariant blocks, want the doc's examples", n)
	}
}

// The invariants of one replay share a budget: once it is spent, nothing
// more is evaluated, and the costliest invariant's result says so.
func TestReplayBudget(t *testing.T) {
	s, err := Parse("costly.inv", `name: cheap
check: true

name: costly
check: [1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, a+b > 0))

name: late
when: step == 5
check: false
`)
	if err != nil {
		t.Fatal(err)
	}
	steps := strlenSteps()
	one := s.Check(steps[:1])[1].Cost
	if one == 0 {
		t.Fatal("the costly invariant cost nothing")
	}
	s.Budget = 2*one + one/2 // enough for steps 1 to 3
	r := s.Check(steps)
	if r[0].TooCostly != "" || r[2].TooCostly != "" {
		t.Errorf("the budget blamed %q / %q, want the costly invariant", r[0].TooCostly, r[2].TooCostly)
	}
	if msg := r[1].TooCostly; !strings.HasPrefix(msg, "costly: ") || !strings.Contains(msg, "by step 3") || !strings.Contains(msg, "from step 4 on") {
		t.Errorf("TooCostly = %q", msg)
	}
	if !r[2].Held {
		t.Error("an invariant was evaluated after the budget ran out")
	}
	s.Budget = 0 // the default: plenty for five steps
	for _, r := range s.Check(steps) {
		if r.TooCostly != "" {
			t.Errorf("default budget: %s", r.TooCostly)
		}
	}
}
