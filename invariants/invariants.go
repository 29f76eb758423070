// Package invariants checks declared invariants, CEL expressions over the
// steps of a replay, compiled once at load. docs/invariants.md is the
// language: the file format, every variable and function, and examples.
package invariants

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"

	"github.com/kavach-dev/kavach"
)

// CostLimit bounds one evaluation of one expression (CEL's cost units:
// about one per operation), so that an invariant cannot hang a diff.
const CostLimit = 1_000_000

// ReplayBudget bounds every evaluation of every invariant on one replay
// together (the same units): a file of invariants cheap enough one step at
// a time cannot make a long replay's check cost minutes. Once it is spent,
// nothing more is evaluated on that replay, and the result says so
// (Result.TooCostly).
const ReplayBudget = 100 * CostLimit

// Step is what an invariant sees of one step of a replay.
type Step struct {
	N       int
	Time    time.Time      // the step's virtual time
	Request map[string]any // the integration's view: command and args, or method, path, ...
	Writes  []string       // keys (or paths) the request writes
	// Sets is the value the request stored under Writes[0], if it stores one.
	Sets    *string
	Replies []any  // normalized replies
	Outcome string // "ok", "error:ERR", "crash", "hang"
	Ran     bool
}

// Invariant is one declared invariant.
type Invariant struct {
	Name        string
	Description string
	When        string // CEL, bool; empty: every step
	Check       string // CEL, bool
	// Except are the variant kinds (kavach.VariantKinds) the invariant
	// does not speak for: it is not checked on their replays.
	Except []string
	File   string
	Line   int // of its name

	when, check cel.Program
}

// Set is a compiled invariants file. Its Check is safe for concurrent use.
type Set struct {
	File       string
	Invariants []*Invariant

	// Budget is the cost one replay's check may spend; 0: ReplayBudget.
	Budget uint64

	mu  sync.Mutex // guards cur, read by the helper functions during Check
	cur *state
}

// state is the trace being checked, for the helper functions.
type state struct {
	steps []Step
	at    int // index of the step being checked
}

// CompileError is an invariant that does not compile, with its position.
type CompileError struct {
	File         string
	Line, Column int
	Msg          string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
}

// Load reads and compiles an invariants file.
func Load(path string) (*Set, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read invariants: %w", err)
	}
	return Parse(path, string(b))
}

// Parse reads and compiles invariants from src; file names them in errors.
//
// The format: invariants separated by blank lines; each a few "key:
// value" lines with keys name (required, letters, digits, - and _),
// description, when, except (variant kinds, separated by commas or
// spaces) and check (required). A value may continue on the
// following lines that are indented. Lines starting with # are comments.
func Parse(file, src string) (*Set, error) {
	s := &Set{File: file}
	env, err := s.env()
	if err != nil {
		return nil, err
	}
	var (
		cur   *block // the invariant being read, nil between two
		last  string // the key of the last line read, which indented lines continue
		names = map[string]int{}
	)
	flush := func() error {
		if cur == nil {
			return nil
		}
		b := cur
		cur = nil
		inv, err := b.compile(env, file, names)
		if err != nil {
			return err
		}
		s.Invariants = append(s.Invariants, inv)
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "#"):
			continue
		case trimmed == "":
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		case line[0] == ' ' || line[0] == '\t':
			if cur == nil || last == "" {
				return nil, &CompileError{file, ln, 1, "an indented line continues nothing: start an invariant with \"name: NAME\""}
			}
			cur.fields[last].value += "\n" + line
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		key = strings.TrimSpace(key)
		if !ok || (key != "name" && key != "description" && key != "when" && key != "except" && key != "check") {
			return nil, &CompileError{file, ln, 1, "want \"name:\", \"description:\", \"when:\", \"except:\" or \"check:\" at the start of the line"}
		}
		if cur == nil {
			cur = &block{line: ln, fields: map[string]*field{}}
		}
		if cur.fields[key] != nil {
			return nil, &CompileError{file, ln, 1, fmt.Sprintf("%s given twice in one invariant (first at line %d): separate invariants with a blank line", key, cur.fields[key].line)}
		}
		// col: the 0-based column where the value starts.
		col := strings.Index(line, ":") + 1 + (len(value) - len(strings.TrimLeft(value, " \t")))
		cur.fields[key] = &field{value: strings.TrimLeft(value, " \t"), line: ln, col: col}
		last = key
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(s.Invariants) == 0 {
		return nil, &CompileError{file, 1, 1, "no invariants: the file declares none"}
	}
	return s, nil
}

// block is one invariant as read: its keys' values, each with where it
// starts.
type block struct {
	line   int // the block's first line
	fields map[string]*field
}

type field struct {
	value     string
	line, col int // col is 0-based
}

// compile makes the block an invariant: its name valid and not in names
// already (names gets it, with its line), a check, and its expressions
// compiled in env.
func (b *block) compile(env *cel.Env, file string, names map[string]int) (*Invariant, error) {
	name := b.fields["name"]
	if name == nil {
		return nil, &CompileError{file, b.line, 1, "an invariant without a name: add \"name: NAME\""}
	}
	n := strings.TrimSpace(name.value)
	if !validName(n) {
		return nil, &CompileError{file, name.line, name.col + 1, fmt.Sprintf("invariant name %q: use letters, digits, - and _", n)}
	}
	if prev, ok := names[n]; ok {
		return nil, &CompileError{file, name.line, name.col + 1, fmt.Sprintf("invariant %q is declared twice (first at line %d)", n, prev)}
	}
	names[n] = name.line
	check := b.fields["check"]
	if check == nil {
		return nil, &CompileError{file, name.line, 1, fmt.Sprintf("invariant %q has no check: add \"check: EXPR\"", n)}
	}
	inv := &Invariant{Name: n, File: file, Line: name.line, Check: check.value}
	if d := b.fields["description"]; d != nil {
		inv.Description = strings.TrimSpace(d.value)
	}
	if e := b.fields["except"]; e != nil {
		inv.Except = strings.FieldsFunc(e.value, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
		if err := kavach.CheckVariantKinds(inv.Except); err != nil {
			return nil, &CompileError{file, e.line, e.col + 1, fmt.Sprintf("invariant %q: except: %v", n, err)}
		}
	}
	var err error
	if inv.check, err = compile(env, file, check.value, check.line, check.col); err != nil {
		return nil, err
	}
	if w := b.fields["when"]; w != nil {
		inv.When = w.value
		if inv.when, err = compile(env, file, w.value, w.line, w.col); err != nil {
			return nil, err
		}
	}
	return inv, nil
}

func validName(n string) bool {
	if n == "" {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// compile compiles one expression that starts at line, 0-based column col
// of file, and must give a bool; errors carry 1-based positions in the file.
func compile(env *cel.Env, file, expr string, line, col int) (cel.Program, error) {
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		e := iss.Errors()[0]
		l, c := e.Location.Line(), e.Location.Column()+1
		if l <= 1 {
			c += col
		}
		return nil, &CompileError{file, line + l - 1, c, e.Message}
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, &CompileError{file, line, col + 1, fmt.Sprintf("the expression gives %s, want bool", ast.OutputType())}
	}
	prg, err := env.Program(ast, cel.CostLimit(CostLimit), cel.EvalOptions(cel.OptTrackCost), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, &CompileError{file, line, col + 1, err.Error()}
	}
	return prg, nil
}

// env declares the variables and functions of docs/invariants.md: CEL's
// standard library, its extensions for strings, lists, math and cel.bind,
// and Kavach's own.
func (s *Set) env() (*cel.Env, error) {
	stepType := cel.MapType(cel.StringType, cel.DynType)
	return cel.NewEnv(
		ext.Strings(), ext.Lists(), ext.Math(), ext.Bindings(),
		cel.Variable("step", cel.IntType),
		cel.Variable("time", cel.TimestampType),
		cel.Variable("req", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("reply", cel.DynType),
		cel.Variable("replies", cel.ListType(cel.DynType)),
		cel.Variable("outcome", cel.StringType),
		cel.Variable("steps", cel.ListType(stepType)),
		cel.Function("lastWrite",
			cel.Overload("lastWrite_string", []*cel.Type{cel.StringType}, stepType,
				cel.UnaryBinding(func(key ref.Val) ref.Val { return s.lastWrite(key, false) }))),
		cel.Function("lastSet",
			cel.Overload("lastSet_string", []*cel.Type{cel.StringType}, cel.DynType,
				cel.UnaryBinding(func(key ref.Val) ref.Val { return s.lastWrite(key, true) }))),
	)
}

// lastWrite is the latest step before the current one that wrote key, as
// a step map ({"found": false} when none); with value, the value that
// step stored, or null when it stored none.
func (s *Set) lastWrite(key ref.Val, value bool) ref.Val {
	k, ok := key.Value().(string)
	st := s.cur
	if !ok || st == nil {
		return types.NewErr("lastWrite: want a string key")
	}
	for i := st.at - 1; i >= 0; i-- {
		p := st.steps[i]
		if !p.Ran {
			continue
		}
		for _, w := range p.Writes {
			if w != k {
				continue
			}
			if !value {
				return types.DefaultTypeAdapter.NativeToValue(stepMap(p))
			}
			if p.Sets == nil || len(p.Writes) != 1 {
				return types.NullValue
			}
			return types.String(*p.Sets)
		}
	}
	if value {
		return types.NullValue
	}
	return types.DefaultTypeAdapter.NativeToValue(map[string]any{"found": false})
}

func stepMap(p Step) map[string]any {
	m := map[string]any{"found": true, "step": int64(p.N), "time": p.Time, "req": p.Request, "outcome": p.Outcome, "reply": nil, "replies": p.Replies}
	if len(p.Replies) > 0 {
		m["reply"] = p.Replies[0]
	}
	return m
}

// Result is one invariant's result on a trace.
type Result struct {
	Name       string `json:"name"`
	Held       bool   `json:"held"`
	FirstStep  int    `json:"first_violation,omitempty"`
	Message    string `json:"message,omitempty"`
	Violations []int  `json:"violations,omitempty"` // every step where it did not hold
	// NotEvaluable are the steps where an expression could not be
	// evaluated (an error, the cost limit, not a bool): neither held nor
	// violated there. NotEvaluableMessage says why, at the first.
	NotEvaluable        []int  `json:"not_evaluable,omitempty"`
	NotEvaluableMessage string `json:"not_evaluable_message,omitempty"`
	// Excepted: the invariant was not checked, the replay being of a
	// variant kind it names in except.
	Excepted bool `json:"excepted,omitempty"`
	// Applied are the steps where it applied (its when held, or it has
	// none): checked there, whatever the check gave.
	Applied []int `json:"-"`
	// TooCostly, on the invariant that spent the most, says that the
	// replay's budget (Set.Budget) ran out and at which step: no invariant
	// was evaluated from there on.
	TooCostly string `json:"too_costly,omitempty"`
	// Cost is what its evaluations spent on the replay.
	Cost uint64 `json:"-"`
}

// Check evaluates every invariant on every step that ran. A check that
// gives false does not hold there; an expression that errors, exceeds its
// cost or gives something other than a bool is not evaluable there, which
// is no violation. The messages say why.
func (s *Set) Check(steps []Step) []Result { return s.CheckVariant(steps, "") }

// CheckVariant is Check on the replay of a variant of the given kind:
// the invariants whose except names the kind are not checked (Excepted).
func (s *Set) CheckVariant(steps []Step, kind string) []Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &state{steps: steps}
	s.cur = st
	defer func() { s.cur = nil }()
	results := make([]Result, len(s.Invariants))
	for i, inv := range s.Invariants {
		results[i] = Result{Name: inv.Name, Held: true, Excepted: kind != "" && slices.Contains(inv.Except, kind)}
	}
	budget := s.Budget
	if budget == 0 {
		budget = ReplayBudget
	}
	var spent uint64
	last := 0 // the last step evaluated
	var history []any
	for i, p := range steps {
		if !p.Ran {
			continue
		}
		if spent > budget {
			tooCostly(results, budget, last, p.N)
			break
		}
		st.at, last = i, p.N
		vars := stepVars(p, history)
		for j, inv := range s.Invariants {
			if results[j].Excepted {
				continue
			}
			spent += inv.checkAt(&results[j], vars, p.N)
		}
		history = append(history, stepMap(p))
	}
	return results
}

// tooCostly says, on the result that spent the most, that the budget ran
// out by step last and nothing was evaluated from step next on.
func tooCostly(results []Result, budget uint64, last, next int) {
	costliest := &results[0]
	for j := range results {
		if results[j].Cost > costliest.Cost {
			costliest = &results[j]
		}
	}
	costliest.TooCostly = fmt.Sprintf("%s: the invariants spent their budget of %d cost units for one replay by step %d, %d of them on %s; no invariant was evaluated from step %d on",
		costliest.Name, budget, last, costliest.Cost, costliest.Name, next)
}

// stepVars are the variables an expression sees at step p, after the
// steps of history.
func stepVars(p Step, history []any) map[string]any {
	vars := map[string]any{
		"step": int64(p.N), "time": p.Time, "req": p.Request, "reply": nil, "replies": p.Replies,
		"outcome": p.Outcome, "steps": history,
	}
	if len(p.Replies) > 0 {
		vars["reply"] = p.Replies[0]
	}
	if p.Replies == nil {
		vars["replies"] = []any{}
	}
	if history == nil {
		vars["steps"] = []any{}
	}
	return vars
}

// checkAt evaluates the invariant at step n with vars, adding to r where
// it applied, was violated or could not be evaluated; it returns the
// cost spent, which r.Cost counts too.
func (inv *Invariant) checkAt(r *Result, vars map[string]any, n int) (spent uint64) {
	v, why, cost := verdictTrue, "", uint64(0)
	if inv.when != nil {
		v, why, cost = eval(inv.when, vars)
		r.Cost += cost
		spent += cost
	}
	if v == verdictTrue {
		v, why, cost = eval(inv.check, vars)
		r.Cost += cost
		spent += cost
	} else if v == verdictFalse {
		return spent // the invariant does not apply here
	}
	// Its when held, or could not be evaluated: not known not to
	// apply.
	r.Applied = append(r.Applied, n)
	switch v {
	case verdictError:
		r.NotEvaluable = append(r.NotEvaluable, n)
		if r.NotEvaluableMessage == "" {
			r.NotEvaluableMessage = fmt.Sprintf("%s: not evaluable: %s at step %d", inv.Name, why, n)
		}
	case verdictFalse:
		r.Violations = append(r.Violations, n)
		if r.Held {
			r.Held, r.FirstStep = false, n
			r.Message = fmt.Sprintf("%s: %s", inv.Name, why)
			if inv.Description != "" {
				r.Message = fmt.Sprintf("%s (%s): %s", inv.Name, inv.Description, why)
			}
		}
	}
	return spent
}

// An evaluation gives true, false, or an error.
type verdict int

const (
	verdictTrue verdict = iota
	verdictFalse
	verdictError
)

// eval runs a program and says whether it gave true, false or could not
// be evaluated, and, if not true, why; and what it cost (CostLimit when
// it was stopped before it could say).
func eval(prg cel.Program, vars map[string]any) (verdict, string, uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	out, det, err := prg.ContextEval(ctx, vars)
	cost := uint64(CostLimit)
	if det != nil && det.ActualCost() != nil {
		cost = *det.ActualCost()
	}
	if err != nil {
		if ctx.Err() != nil {
			// Stopped by the time limit: as costly as the cost limit.
			cost = max(cost, CostLimit)
		}
		return verdictError, err.Error(), max(cost, 1)
	}
	if b, ok := out.Value().(bool); ok {
		if b {
			return verdictTrue, "", cost
		}
		return verdictFalse, "the check is false", cost
	}
	return verdictError, fmt.Sprintf("the expression gave %v, not a bool", out.Value()), cost
}

// Names lists the invariants' names.
func (s *Set) Names() []string {
	var out []string
	for _, inv := range s.Invariants {
		out = append(out, inv.Name)
	}
	return out
}

// Has reports whether the set declares an invariant of that name.
func (s *Set) Has(name string) bool {
	for _, inv := range s.Invariants {
		if inv.Name == name {
			return true
		}
	}
	return false
}
