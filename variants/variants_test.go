package variants_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/variants"
)

// incident is the GETRANGE incident as recorded: four steps that work,
// then GETRANGE greeting -100 -1, which crashed the old build.
func incident() []kavach.Event {
	var evs []kavach.Event
	add := func(dir kavach.Direction, at time.Duration, data string) {
		evs = append(evs, kavach.Event{Seq: uint64(len(evs) + 1), Conn: 1, Dir: dir, Offset: at, Data: []byte(data)})
	}
	cmd := func(args ...string) string {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		return string(redis.AppendCommand(nil, b...))
	}
	add(kavach.Open, 0, "")
	add(kavach.Request, 1*time.Millisecond, cmd("SET", "greeting", "hello world"))
	add(kavach.Response, 2*time.Millisecond, "+OK\r\n")
	add(kavach.Request, 3*time.Millisecond, cmd("APPEND", "greeting", "!"))
	add(kavach.Response, 4*time.Millisecond, ":12\r\n")
	add(kavach.Request, 5*time.Millisecond, cmd("STRLEN", "greeting"))
	add(kavach.Response, 6*time.Millisecond, ":12\r\n")
	add(kavach.Request, 7*time.Millisecond, cmd("GETRANGE", "greeting", "0", "4"))
	add(kavach.Response, 8*time.Millisecond, "$5\r\nhello\r\n")
	add(kavach.Request, 9*time.Millisecond, cmd("GETRANGE", "greeting", "-100", "-1"))
	add(kavach.Close, 10*time.Millisecond, "server")
	return evs
}

// schema is what COMMAND DOCS says of the commands in the incident.
var schema = redis.Schema{
	"GETRANGE": {{Name: "key", Type: "key"}, {Name: "start", Type: "integer"}, {Name: "end", Type: "integer"}},
	"SET":      {{Name: "key", Type: "key"}, {Name: "value", Type: "string"}},
	"APPEND":   {{Name: "key", Type: "key"}, {Name: "value", Type: "string"}},
	"STRLEN":   {{Name: "key", Type: "key"}},
}

func opts(budget int, seed uint64) variants.Options {
	return variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: schema, Budget: budget, Seed: seed}
}

func descriptions(vs []variants.Variant) []string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprintf("%d %s", v.K, v.Description))
	}
	return out
}

func TestTypeAwareMutationsOfTheFailingInput(t *testing.T) {
	vs := variants.Generate(incident(), 5, opts(1000, 1))
	d := strings.Join(descriptions(vs), "\n")
	for _, want := range []string{
		`step 5: argument 2 (start) "-100" → "-101"`,
		`step 5: argument 2 (start) "-100" → "-99"`,
		`step 5: argument 2 (start) "-100" → "100"`,
		`step 5: argument 2 (start) "-100" → "-9223372036854775808"`,
		`step 5: argument 3 (end) "-1" → "0"`,
		`step 5: argument 1 (key) "greeting" → "kavach:missing-key", a key that does not exist`,
		`step 5: argument 3 (end) "-1" → "4", taken from step 4`,
		`step 5: argument 3 (end) "-1" removed`,
		`step 5 (GETRANGE "greeting" "-100" "-1") moved before step 2`,
		`step 1 (SET "greeting" "hello world") dropped`,
		`step 2 (APPEND "greeting" "!") delivered twice`,
		`the clock jumps +1d right before step 5`,
		`the clock jumps -1h right before step 5`,
		`regression: step 4: argument 2 (start) "0" → "1"`,
		`regression: step 2: argument 2 (value) "!" → ""` + "\n",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("no variant %q among:\n%s", want, d)
		}
	}
	// A number is never mutated as a string, nor a key as a number.
	if strings.Contains(d, `(start) "-100" → "hello world"`) || strings.Contains(d, `(key) "greeting" → "0"`) {
		t.Errorf("mutations ignore the field types:\n%s", d)
	}
}

func TestVariantEventsAreTheMutation(t *testing.T) {
	vs := variants.Generate(incident(), 5, opts(1000, 1))
	byDesc := map[string]variants.Variant{}
	for _, v := range vs {
		byDesc[v.Description] = v
	}
	steps := func(v variants.Variant) []string {
		var out []string
		for _, s := range kavach.Steps(v.Events, redis.Integration{}) {
			out = append(out, redis.Integration{}.DescribeRequest(s.Request.Data, 0))
		}
		return out
	}
	for desc, want := range map[string][]string{
		`step 5: argument 2 (start) "-100" → "-101"`:                   {`SET "greeting" "hello world"`, `APPEND "greeting" "!"`, `STRLEN "greeting"`, `GETRANGE "greeting" "0" "4"`, `GETRANGE "greeting" "-101" "-1"`},
		`step 5 (GETRANGE "greeting" "-100" "-1") moved before step 2`: {`SET "greeting" "hello world"`, `GETRANGE "greeting" "-100" "-1"`, `APPEND "greeting" "!"`, `STRLEN "greeting"`, `GETRANGE "greeting" "0" "4"`},
		`step 3 (STRLEN "greeting") dropped`:                           {`SET "greeting" "hello world"`, `APPEND "greeting" "!"`, `GETRANGE "greeting" "0" "4"`, `GETRANGE "greeting" "-100" "-1"`},
		`step 2 (APPEND "greeting" "!") delivered twice`:               {`SET "greeting" "hello world"`, `APPEND "greeting" "!"`, `APPEND "greeting" "!"`, `STRLEN "greeting"`, `GETRANGE "greeting" "0" "4"`, `GETRANGE "greeting" "-100" "-1"`},
		`regression: step 4: argument 2 (start) "0" → "1"`:             {`SET "greeting" "hello world"`, `APPEND "greeting" "!"`, `STRLEN "greeting"`, `GETRANGE "greeting" "1" "4"`},
	} {
		v, ok := byDesc[desc]
		if !ok {
			t.Errorf("no variant %q", desc)
			continue
		}
		if diff := cmp.Diff(want, steps(v)); diff != "" {
			t.Errorf("%s: steps (-want +got):\n%s", desc, diff)
		}
		for i, ev := range v.Events {
			if ev.Seq != uint64(i+1) {
				t.Errorf("%s: event %d numbered %d", desc, i, ev.Seq)
			}
		}
	}
	// The repeated step keeps its origin, and with it its noise.
	if v := byDesc[`step 2 (APPEND "greeting" "!") delivered twice`]; fmt.Sprint(v.Origin) != "[1 2 2 3 4 5]" || v.Kind != "twice" {
		t.Errorf("origin of the duplicated step = %v (kind %s), want [1 2 2 3 4 5] (twice)", v.Origin, v.Kind)
	}
	for _, v := range vs {
		if !slices.Contains(kavach.VariantKinds, v.Kind) {
			t.Errorf("%s: kind %q is none of kavach.VariantKinds", v.Description, v.Kind)
		}
	}
	if v := byDesc[`the clock jumps +1h right before step 5`]; v.ShiftAt(4) != 0 || v.ShiftAt(5) != time.Hour {
		t.Errorf("clock variant shifts %v at step 4, %v at step 5", v.ShiftAt(4), v.ShiftAt(5))
	}
}

func TestOneSeedOneSet(t *testing.T) {
	a := descriptions(variants.Generate(incident(), 5, opts(20, 7)))
	b := descriptions(variants.Generate(incident(), 5, opts(20, 7)))
	c := descriptions(variants.Generate(incident(), 5, opts(20, 8)))
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("the same seed gave different variants:\n%s", diff)
	}
	if cmp.Equal(a, c) {
		t.Error("seeds 7 and 8 gave the same sample: the seed is ignored")
	}
	if len(a) != 20 {
		t.Errorf("%d variants, want the budget of 20", len(a))
	}
	var reg int
	for _, v := range variants.Generate(incident(), 5, opts(20, 7)) {
		if v.Regression {
			reg++
		}
	}
	if reg != 5 {
		t.Errorf("%d regression variants in a budget of 20, want a quarter (5)", reg)
	}
}

func TestNoDuplicates(t *testing.T) {
	vs := variants.Generate(incident(), 5, opts(1000, 1))
	seen := map[string]int{}
	for _, v := range vs {
		var b strings.Builder
		for _, ev := range v.Events {
			fmt.Fprintf(&b, "%d|%d|%q\n", ev.Conn, ev.Dir, ev.Data)
		}
		fmt.Fprint(&b, v.ShiftFrom, v.Shift)
		if k, ok := seen[b.String()]; ok {
			t.Errorf("variants %d and %d are the same (%q, %q)", k, v.K, vs[k-1].Description, v.Description)
		}
		seen[b.String()] = v.K
	}
	if len(vs) < 60 {
		t.Errorf("only %d variants of a five-step incident", len(vs))
	}
}

func TestTooNarrowToVary(t *testing.T) {
	// One request with one string argument: little to vary, no earlier
	// step to move, drop or repeat, and no clock to shift before it.
	evs := []kavach.Event{
		{Seq: 1, Conn: 1, Dir: kavach.Open},
		{Seq: 2, Conn: 1, Dir: kavach.Request, Data: redis.AppendCommand(nil, []byte("ECHO"), []byte("boom"))},
		{Seq: 3, Conn: 1, Dir: kavach.Close, Data: []byte("server")},
	}
	vs := variants.Generate(evs, 1, opts(64, 1))
	if len(vs) > 5 {
		t.Errorf("%d variants of a one-step incident: %v", len(vs), descriptions(vs))
	}
}

func TestExcludeKinds(t *testing.T) {
	// A fixture may exclude kinds (kavach mark --exclude): none is made,
	// and the budget goes to the others.
	o := opts(1000, 1)
	o.Exclude = []string{"clock-back", "twice"}
	all, some := variants.Generate(incident(), 5, opts(1000, 1)), variants.Generate(incident(), 5, o)
	count := func(vs []variants.Variant, kind string) int {
		n := 0
		for _, v := range vs {
			if v.Kind == kind {
				n++
			}
		}
		return n
	}
	if count(all, "clock-back") == 0 || count(all, "twice") == 0 {
		t.Fatal("the incident has no clock-back or twice variants to exclude")
	}
	if count(some, "clock-back")+count(some, "twice") != 0 || count(some, "clock-forward") != count(all, "clock-forward") {
		t.Errorf("excluded kinds made anyway, or others lost")
	}
}

func TestRegressionVariantsOfAContract(t *testing.T) {
	// A contract is a recording with no failure: every step's fields are
	// mutated, the last step's too, and the rest of the recording is kept.
	evs := incident()[:10] // the four steps that work, no failure
	vs := variants.Regression(evs, opts(1000, 1))
	mutated := map[string]bool{}
	for i, v := range vs {
		if !v.Regression || v.Kind != "regression" || v.K != i+1 {
			t.Fatalf("variant %+v: want regression variants numbered from 1", v)
		}
		if len(v.Events) != len(evs) {
			t.Errorf("%s: %d events, want the whole recording's %d", v.Description, len(v.Events), len(evs))
		}
		mutated[strings.SplitN(v.Description, ":", 3)[1]] = true
	}
	for _, step := range []string{" step 1", " step 2", " step 3", " step 4"} {
		if !mutated[step] {
			t.Errorf("no variant of%s among %v", step, descriptions(vs))
		}
	}
	if few := variants.Regression(evs, opts(5, 1)); len(few) != 5 {
		t.Errorf("budget 5: %d variants", len(few))
	}
	if a, b := descriptions(variants.Regression(evs, opts(5, 2))), descriptions(variants.Regression(evs, opts(5, 2))); !slices.Equal(a, b) {
		t.Errorf("one seed, two sets: %v %v", a, b)
	}
}

// learned is what the old build told Learn: the incident's commands'
// arguments, their keys, and two types of key with their writes.
var learned = &redis.Learned{
	Args: schema,
	Keys: map[string]redis.KeyRange{"GETRANGE": {First: 1, Last: 1, Step: 1}, "SET": {First: 1, Last: 1, Step: 1},
		"APPEND": {First: 1, Last: 1, Step: 1}, "STRLEN": {First: 1, Last: 1, Step: 1}},
	Types: []redis.TypeWrite{{Type: "string", Write: []string{"SET", "", "hello world"}}, {Type: "list", Write: []string{"RPUSH", "", "alpha", "beta"}}},
}

func TestTypeSubstitution(t *testing.T) {
	o := opts(1000, 1)
	o.Schema = learned
	vs := variants.Generate(incident(), 5, o)
	byDesc := map[string]variants.Variant{}
	for _, v := range vs {
		byDesc[v.Description] = v
	}
	steps := func(v variants.Variant) []string {
		var out []string
		for _, s := range kavach.Steps(v.Events, redis.Integration{}) {
			out = append(out, redis.Integration{}.DescribeRequest(s.Request.Data, 0))
		}
		return out
	}
	for desc, want := range map[string][]string{
		`step 5: argument 1 (key) "greeting" → a list key (RPUSH kavach:type:list alpha beta)`: {`SET "greeting" "hello world"`, `APPEND "greeting" "!"`, `STRLEN "greeting"`, `GETRANGE "greeting" "0" "4"`,
			`RPUSH "kavach:type:list" "alpha" "beta"`, `GETRANGE "kavach:type:list" "-100" "-1"`},
		`step 5: argument 1 (key) "greeting" → a string key (SET kavach:type:string hello world)`: {`SET "greeting" "hello world"`, `APPEND "greeting" "!"`, `STRLEN "greeting"`, `GETRANGE "greeting" "0" "4"`,
			`SET "kavach:type:string" "hello world"`, `GETRANGE "kavach:type:string" "-100" "-1"`},
		`regression: step 2: argument 1 (key) "greeting" → a list key (RPUSH kavach:type:list alpha beta)`: {`SET "greeting" "hello world"`,
			`RPUSH "kavach:type:list" "alpha" "beta"`, `APPEND "kavach:type:list" "!"`, `STRLEN "greeting"`, `GETRANGE "greeting" "0" "4"`},
	} {
		v, ok := byDesc[desc]
		if !ok {
			t.Errorf("no variant %q among:\n%s", desc, strings.Join(descriptions(vs), "\n"))
			continue
		}
		if diff := cmp.Diff(want, steps(v)); diff != "" {
			t.Errorf("%s: steps (-want +got):\n%s", desc, diff)
		}
	}
	// The write is a new input; the varied request keeps its origin, so
	// the grade finds the failing request where it now is.
	v := byDesc[`step 5: argument 1 (key) "greeting" → a list key (RPUSH kavach:type:list alpha beta)`]
	if fmt.Sprint(v.Origin) != "[1 2 3 4 0 5]" || v.Kind != "type" || v.Regression {
		t.Errorf("origin %v, kind %s, regression %v; want [1 2 3 4 0 5], type, false", v.Origin, v.Kind, v.Regression)
	}
	// The same budget with a schema of no types: no such variant.
	if n := len(variants.Generate(incident(), 5, opts(1000, 1))); n >= len(vs) {
		t.Errorf("%d variants without types, %d with: the types add none", n, len(vs))
	}
}

// Deferred variants are the same variants, made only by Build: Generate
// keeps no copy of the recording for them, and each Build is a fresh copy.
func TestDeferredBuild(t *testing.T) {
	for _, contract := range []bool{false, true} {
		made, deferred := opts(64, 3), opts(64, 3)
		deferred.Deferred = true
		var now, later []variants.Variant
		if contract {
			now, later = variants.Regression(incident(), made), variants.Regression(incident(), deferred)
		} else {
			now, later = variants.Generate(incident(), 5, made), variants.Generate(incident(), 5, deferred)
		}
		if len(now) == 0 || len(now) != len(later) {
			t.Fatalf("contract %v: %d variants made, %d deferred", contract, len(now), len(later))
		}
		// Built at once, as a diff's workers build them.
		var wg sync.WaitGroup
		for i := range later {
			wg.Go(func() { later[i].Build() })
		}
		wg.Wait()
		for i := range now {
			if later[i].Events != nil {
				t.Errorf("contract %v: deferred variant %d (%s) has its events made already", contract, later[i].K, later[i].Description)
			}
			events, origin := later[i].Build()
			if now[i].Description != later[i].Description || !cmp.Equal(now[i].Events, events) || !slices.Equal(now[i].Origin, origin) {
				t.Errorf("contract %v: variant %d differs when deferred:\n%s\nvs\n%s", contract, i+1, now[i].Description, later[i].Description)
			}
			again, _ := later[i].Build()
			if len(again) > 0 && &again[0] == &events[0] {
				t.Errorf("contract %v: variant %d: Build gave the same copy twice", contract, i+1)
			}
		}
	}
}

// A failing step outside the incident's steps (a report or a caller's
// mistake) gives no variants, with keys known or not, and never panics.
func TestFailingStepOutOfRange(t *testing.T) {
	o := opts(64, 1)
	keys := make([][]string, 5)
	for i := range keys {
		keys[i] = []string{"k"}
	}
	for _, withKeys := range []bool{false, true} {
		o.Keys = nil
		if withKeys {
			o.Keys = keys
		}
		for _, f := range []int{-1, 0, 6} {
			if vs := variants.Generate(incident(), f, o); len(vs) != 0 {
				t.Errorf("failing step %d (keys %v): %d variants, want none", f, withKeys, len(vs))
			}
		}
	}
}
