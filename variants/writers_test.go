package variants_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/variants"
)

var writersSchema = &redis.Learned{Args: redis.Schema{
	"XADD":        {{Name: "key", Type: "key"}, {Name: "id", Type: "string"}, {Name: "field", Type: "string"}, {Name: "value", Type: "string"}},
	"XRANGE":      {{Name: "key", Type: "key"}, {Name: "start", Type: "string"}, {Name: "end", Type: "string"}},
	"SET":         {{Name: "key", Type: "key"}, {Name: "value", Type: "string"}},
	"GET":         {{Name: "key", Type: "key"}},
	"INCRBYFLOAT": {{Name: "key", Type: "key"}, {Name: "increment", Type: "double"}},
}}

// The value kinds go to the earlier steps that write the failing
// request's key (writer-value), and only to them: a stream's entries
// written with other ids, the range kept.
func TestWriterValues(t *testing.T) {
	evs, keys := session(
		[]string{"XADD", "events", "5000000000-1", "name", "a"}, // 1: writes events
		[]string{"XADD", "other", "7-1", "name", "x"},           // 2: another key
		[]string{"XADD", "events", "5000000001-1", "name", "b"}, // 3: writes events
		[]string{"XRANGE", "events", "-", "+"},                  // 4: fails
	)
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: writersSchema, Budget: 1000, Seed: 1, Keys: keys}
	vs := variants.Generate(evs, 4, o)
	steps := map[string]int{}
	want := `step 3 (writes the failing request's key): structured, argument 2 (id) "5000000001-1" → "9223372036854775807-1" (ms part 2^63-1)`
	found := false
	for _, v := range vs {
		if v.Kind != "writer-value" {
			continue
		}
		steps[strings.SplitN(v.Description, " (", 2)[0]]++
		if v.Place != variants.PlaceWriter || v.Regression {
			t.Errorf("%s: place %s, regression %v; want a writer's variant of the incident", v.Description, v.Place, v.Regression)
		}
		if v.Description == want {
			found = true
			got := kavach.Steps(v.Events, redis.Integration{})
			if d := (redis.Integration{}).DescribeRequest(got[2].Request.Data, 0); d != `XADD "events" "9223372036854775807-1" "name" "b"` || len(got) != 4 {
				t.Errorf("%s: step 3 is %s, %d steps", want, d, len(got))
			}
			if !slices.Equal(v.Origin, []int{1, 2, 3, 4}) {
				t.Errorf("%s: origin %v, want every step its own (the failing step kept)", want, v.Origin)
			}
		}
	}
	if steps["step 1"] == 0 || steps["step 3"] == 0 || steps["step 2"] > 0 || len(steps) != 2 {
		t.Errorf("writer-value variants by step %v: want steps 1 and 3, the writers of events", steps)
	}
	if !found {
		t.Errorf("no variant %q among:\n%s", want, strings.Join(descriptions(vs), "\n"))
	}

	// A script that names the key (its writes unknown to the codec: an
	// "other" step) gets them too: its call sites, runners and ARGV.
	evs, keys = session(
		[]string{"HSET", "stock", "n", "1"},
		[]string{"EVAL", "return redis.call('HINCRBY', KEYS[1], 'n', ARGV[1])", "1", "stock", "5"},
		[]string{"HGET", "stock", "n"},
	)
	keys[1] = []string{"stock"}
	kinds := map[string]bool{}
	for _, v := range variants.Generate(evs, 3, variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: writersSchema, Budget: 1000, Seed: 1, Keys: keys}) {
		if v.Kind == "writer-value" && strings.HasPrefix(v.Description, "step 2 (a script naming the failing request's key): ") {
			kinds[strings.SplitN(strings.TrimPrefix(v.Description, "step 2 (a script naming the failing request's key): "), ",", 2)[0]] = true
			if v.Place != variants.PlaceOther {
				t.Errorf("%s: place %s, want other (a script's writes are unknown)", v.Description, v.Place)
			}
		}
	}
	if !kinds["script-site"] || !kinds["runner"] || !kinds["number-form"] {
		t.Errorf("the script's writer-value variants are of kinds %v, want script sites, runners and its ARGV's number forms", kinds)
	}

	// Switched off, none; and none when the keys are unknown (no step is
	// known to write the failing request's key).
	o.Exclude = []string{"writer-value"}
	evs, _ = session(
		[]string{"XADD", "events", "5000000000-1", "name", "a"},
		[]string{"XADD", "other", "7-1", "name", "x"},
		[]string{"XADD", "events", "5000000001-1", "name", "b"},
		[]string{"XRANGE", "events", "-", "+"},
	)
	for _, v := range variants.Generate(evs, 4, o) {
		if v.Kind == "writer-value" {
			t.Fatalf("excluded, yet %s", v.Description)
		}
	}
	o.Exclude, o.Keys = nil, nil
	for _, v := range variants.Generate(evs, 4, o) {
		if v.Kind == "writer-value" {
			t.Fatalf("keys unknown, yet %s", v.Description)
		}
	}
}

// Read-back variants: number forms on an earlier write whose key a later
// step before the failure names, as regression variants cut before the
// failing step; a write nothing reads back, or read back only by the
// failing step, gets none.
func TestReadBackVariants(t *testing.T) {
	evs, keys := session(
		[]string{"SET", "balance", "10"},          // 1: read back by 2
		[]string{"INCRBYFLOAT", "balance", "2.5"}, // 2: read back by 3
		[]string{"GET", "balance"},                // 3
		[]string{"SET", "note", "7"},              // 4: never read
		[]string{"SET", "debt", "5"},              // 5: read only by the failing step
		[]string{"INCRBYFLOAT", "debt", "-3"},     // 6: fails
	)
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: writersSchema, Budget: 1000, Seed: 1, Keys: keys}
	vs := variants.Generate(evs, 6, o)
	steps := map[string]int{}
	want := `read-back: step 2: argument 2 (increment) "2.5" → "0.1" (a fraction no binary float holds exactly), read back at step 3`
	found := false
	for _, v := range vs {
		if v.Kind != "read-back" {
			continue
		}
		steps[strings.SplitN(v.Description, ":", 3)[1]]++
		if !v.Regression || v.Place != variants.PlaceRegression {
			t.Errorf("%s: place %s, regression %v; want a regression variant", v.Description, v.Place, v.Regression)
		}
		if v.Description == want {
			found = true
			got := kavach.Steps(v.Events, redis.Integration{})
			if len(got) != 5 {
				t.Errorf("%s: %d steps, want the recording cut before step 6", want, len(got))
			}
			if d := (redis.Integration{}).DescribeRequest(got[1].Request.Data, 0); d != `INCRBYFLOAT "balance" "0.1"` {
				t.Errorf("%s: step 2 is %s", want, d)
			}
		}
	}
	if steps[" step 1"] == 0 || steps[" step 2"] == 0 || len(steps) != 2 {
		t.Errorf("read-back variants by step %v: want steps 1 and 2, the writes read back before the failure", steps)
	}
	if !found {
		t.Errorf("no variant %q among:\n%s", want, strings.Join(descriptions(vs), "\n"))
	}
	// The budget is shared: a small one still keeps some, and no more
	// variants than it allows.
	o.Budget = 16
	small := variants.Generate(evs, 6, o)
	n := 0
	for _, v := range small {
		if v.Kind == "read-back" {
			n++
		}
	}
	if len(small) != 16 || n == 0 {
		t.Errorf("budget 16: %d variants, %d read-back; want 16 with some read-back", len(small), n)
	}
	// Each write's first read-back variants are numbers no binary float
	// holds exactly; an integer written otherwise is none of them.
	for _, v := range vs {
		if v.Kind == "read-back" && (strings.Contains(v.Description, `→ "010"`) || strings.Contains(v.Description, `→ "+10"`)) {
			t.Errorf("%s: an integer written otherwise", v.Description)
		}
	}
	for _, v := range small {
		if v.Kind == "read-back" && !strings.Contains(v.Description, `"0.1"`) && !strings.Contains(v.Description, `"1e-3"`) && !strings.Contains(v.Description, `"2.51"`) && !strings.Contains(v.Description, `"5e-324"`) {
			t.Errorf("budget 16 kept %s, want a number no binary float holds exactly first", v.Description)
		}
	}
}

// A writer of the failing request's key is also made by the other
// commands of its family, when they still write that key: HINCRBYFLOAT
// for the HINCRBY whose stored value the failing HGET reads; not INCRBY
// or ZINCRBY, which would write a key of their own.
func TestWriterSiblings(t *testing.T) {
	evs, keys := session(
		[]string{"HSET", "stock", "apples", "10"},
		[]string{"HINCRBY", "stock", "apples", "-3"},
		[]string{"SET", "other", "1"},
		[]string{"HGET", "stock", "apples"},
	)
	schema := &redis.Learned{Args: redis.Schema{
		"HINCRBY":      {{Name: "key", Type: "key"}, {Name: "field", Type: "string"}, {Name: "increment", Type: "integer"}},
		"HINCRBYFLOAT": {{Name: "key", Type: "key"}, {Name: "field", Type: "string"}, {Name: "increment", Type: "double"}},
		"HGET":         {{Name: "key", Type: "key"}, {Name: "field", Type: "string"}},
	}, Commands: map[string]bool{"HINCRBY": true, "HINCRBYFLOAT": true, "INCRBY": true, "ZINCRBY": true, "DECRBY": true, "INCRBYFLOAT": true}}
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: schema, Budget: 1000, Seed: 1, Keys: keys}
	var got []string
	for _, v := range variants.Generate(evs, 4, o) {
		if v.Kind != "sibling" || v.Place != variants.PlaceWriter {
			continue
		}
		got = append(got, v.Description)
		steps := kavach.Steps(v.Events, redis.Integration{})
		if d := (redis.Integration{}).DescribeRequest(steps[len(steps)-1].Request.Data, 0); d != `HGET "stock" "apples"` || v.Regression {
			t.Errorf("%s: last step %s, regression %v: want the failing read kept, a variant of the incident", v.Description, d, v.Regression)
		}
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "step 2 (writes the failing request's key): sibling, HINCRBY → HINCRBYFLOAT") {
		t.Errorf("writers' siblings:\n%s\nwant one, step 2 made by HINCRBYFLOAT", strings.Join(got, "\n"))
	}
	o.Exclude = []string{"sibling"}
	for _, v := range variants.Generate(evs, 4, o) {
		if v.Kind == "sibling" {
			t.Errorf("sibling excluded, made: %s", v.Description)
		}
	}
}

// A kept variant of a writer's value carries the next values of the same
// part of the same field (Alternates, in the order made): a value the
// old build refuses at the writer stores nothing, and the grader tries
// the next. The stream id's ms part goes from 2^64-1 down to 2^63-1.
func TestWriterValueAlternates(t *testing.T) {
	evs, keys := session(
		[]string{"XADD", "events", "5000000000-1", "name", "a"},
		[]string{"XADD", "events", "5000000001-1", "name", "b"},
		[]string{"XRANGE", "events", "-", "+"},
	)
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: writersSchema, Budget: 64, Seed: 1, Keys: keys}
	var first *variants.Variant
	vs := variants.Generate(evs, 3, o)
	for i, v := range vs {
		if v.Kind != "writer-value" && len(v.Alternates) > 0 {
			t.Errorf("%s (%s) has alternates", v.Description, v.Kind)
		}
		if v.Kind == "writer-value" && strings.HasPrefix(v.Description, `step 2 (writes the failing request's key): structured, argument 2 (id) "5000000001-1" → "18446744073709551615-1"`) {
			first = &vs[i]
		}
	}
	if first == nil {
		t.Fatalf("no writer-value variant of step 2's ms part 2^64-1 among:\n%s", strings.Join(descriptions(vs), "\n"))
	}
	var got []string
	for _, a := range first.Alternates {
		if a.K != first.K || a.Writer() != 2 || first.Writer() != 2 {
			t.Errorf("alternate %s: K %d (want %d), writer %d", a.Description, a.K, first.K, a.Writer())
		}
		got = append(got, a.Description[strings.LastIndex(a.Description, "→"):])
	}
	want := []string{`→ "0-1" (ms part zero)`, `→ "18446744073709551616-1" (ms part 2^64, past the largest)`, `→ "9223372036854775808-1" (ms part 2^63, past 64-bit signed)`, `→ "9223372036854775807-1" (ms part 2^63-1)`, `→ "1-1" (ms part one)`, `→ "5000000002-1" (ms part +1)`}
	if !slices.Equal(got, want) {
		t.Errorf("alternates of %s:\n%s\nwant\n%s", first.Description, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	a := first.Alternates[3]
	steps := kavach.Steps(func() []kavach.Event { e, _ := a.Build(); return e }(), redis.Integration{})
	if d := (redis.Integration{}).DescribeRequest(steps[1].Request.Data, 0); d != `XADD "events" "9223372036854775807-1" "name" "b"` {
		t.Errorf("alternate 4 sends %s at step 2", d)
	}
}

// Read-back forms come in the order that can show a lossy write: first
// those whose stored number (the write's recorded answer less its
// recorded value plus the new one: INCRBYFLOAT answered 12.5 after 2.5,
// so 10 plus the new value) reads otherwise at 17 digits (10.001 is
// 10.000999999999999; 10.1 and 12.51 are not); and the budget's first
// round takes the read-back of a write by the failing request's own
// command. Planted: 2.51 first, or the SET's read-back, fails it.
func TestReadBackFormsThatShow(t *testing.T) {
	evs, keys := session(
		[]string{"SET", "balance", "10"},          // 1: read back by 2
		[]string{"INCRBYFLOAT", "balance", "2.5"}, // 2: read back by 3
		[]string{"GET", "balance"},                // 3
		[]string{"SET", "debt", "5"},              // 4
		[]string{"INCRBYFLOAT", "debt", "-3"},     // 5: fails
	)
	for i := range evs {
		if evs[i].Dir == kavach.Response && evs[i].Seq == 5 {
			evs[i].Data = []byte("$4\r\n12.5\r\n")
		}
	}
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: writersSchema, Budget: 1000, Seed: 1, Keys: keys}
	var order []string
	for _, v := range variants.Generate(evs, 5, o) {
		if v.Kind == "read-back" && strings.HasPrefix(v.Description, "read-back: step 2:") {
			order = append(order, v.Description)
		}
	}
	if len(order) == 0 || !strings.Contains(order[0], `→ "1e-3"`) {
		t.Errorf("step 2's read-back forms in order:\n%s\nwant 1e-3 first (10.001 shows at 17 digits)", strings.Join(order, "\n"))
	}
	// A budget the first round fills (one variant of each kind): its one
	// read-back, whatever the seed, is step 2's.
	for seed := uint64(1); seed <= 8; seed++ {
		o.Budget, o.Seed = 14, seed
		var got []string
		for _, v := range variants.Generate(evs, 5, o) {
			if v.Kind == "read-back" {
				got = append(got, v.Description)
			}
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], `read-back: step 2: argument 2 (increment) "2.5" → "1e-3"`) {
			t.Errorf("seed %d, budget 14: read-back variants %q, want step 2's 1e-3 alone (the failing command's own write)", seed, got)
		}
	}
}
