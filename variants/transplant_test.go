package variants_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/variants"
)

var transplantSchema = redis.Schema{
	"SET":    {{Name: "key", Type: "key"}, {Name: "value", Type: "string"}},
	"INCRBY": {{Name: "key", Type: "key"}, {Name: "increment", Type: "integer"}},
	"LTRIM":  {{Name: "key", Type: "key"}, {Name: "start", Type: "integer"}, {Name: "stop", Type: "integer"}},
}

// The failing request's value goes into the fields of its type in the
// other requests, before and after it; each reproduces at the request it
// went into (FailsAt); a key is no trigger, nor a value another request
// carries in a field of its type.
func TestTransplants(t *testing.T) {
	evs, keys := session(
		[]string{"SET", "name", "kavach"},      // 1: a string field: no number goes there
		[]string{"INCRBY", "counter", "5"},     // 2
		[]string{"INCRBY", "counter", "-3000"}, // 3: fails
		[]string{"LTRIM", "recent", "0", "5"},  // 4: 5 is carried by step 2 too
	)
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: transplantSchema, Budget: 200, Seed: 1, Keys: keys}
	var got []string
	for _, v := range variants.Generate(evs, 3, o) {
		if v.Kind != "transplant" {
			continue
		}
		got = append(got, v.Description)
		// Placed as the request it changes: step 2 writes counter, step
		// 4 comes after the failure.
		if want := map[int]string{2: variants.PlaceWriter, 4: variants.PlaceOther}[v.FailsAt]; v.Place != want {
			t.Errorf("variant %d (%s): place %s, want %s", v.K, v.Description, v.Place, want)
		}
		if !strings.HasPrefix(v.Description, "step "+string(rune('0'+v.FailsAt))+" ") {
			t.Errorf("variant %d (%s) fails at step %d: not the step it changed", v.K, v.Description, v.FailsAt)
		}
		if strings.Contains(v.Description, `"counter"`) || strings.Contains(v.Description, `"name"`) {
			t.Errorf("variant %d carries a key: %s", v.K, v.Description)
		}
	}
	want := []string{
		`step 2 (before the failure): argument 2 (increment) "5" → "-3000", step 3's argument 2 (increment) carried over`,
		`step 4 (after the failure): argument 2 (start) "0" → "-3000", step 3's argument 2 (increment) carried over`,
		`step 4 (after the failure): argument 3 (stop) "5" → "-3000", step 3's argument 2 (increment) carried over`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("transplants:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Switched off, none; in a small budget they share it.
	o.Exclude = []string{"transplant"}
	for _, v := range variants.Generate(evs, 3, o) {
		if v.Kind == "transplant" {
			t.Errorf("excluded, yet made: %s", v.Description)
		}
	}
	o.Exclude, o.Budget = nil, 12
	if vs := variants.Generate(evs, 3, o); len(vs) != 12 {
		t.Errorf("%d variants in a budget of 12", len(vs))
	}
}

// A long recording: the transplants go to the nearest steps only, at
// most the budget's number of them.
func TestTransplantsBounded(t *testing.T) {
	var cmds [][]string
	for i := 0; i < 5000; i++ {
		cmds = append(cmds, []string{"INCRBY", "counter", "5"})
	}
	cmds[2500] = []string{"INCRBY", "counter", "-3000"}
	evs, keys := session(cmds...)
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: transplantSchema, Budget: 16, Seed: 1, Keys: keys}
	steps := map[int]bool{}
	for _, v := range variants.Generate(evs, 2501, o) {
		if v.Kind == "transplant" {
			steps[v.FailsAt] = true
			if d := v.FailsAt - 2501; d < -16 || d > 16 {
				t.Errorf("variant %d goes to step %d, far from the failure", v.K, v.FailsAt)
			}
		}
	}
	if len(steps) == 0 {
		t.Error("no transplant")
	}
}

// For HTTP, a query parameter's value goes to the query parameters of
// the other requests, a JSON field's to JSON fields: never to a path or a
// header.
func TestTransplantsHTTP(t *testing.T) {
	evs := httpSession(
		"GET /items/7?page=2 HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"count\": 40}",
		"GET /items/7?page=999999999999 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /items/8?page=3&size=5 HTTP/1.1\r\nHost: x\r\n\r\n",
	)
	c := axum.Integration{}
	var got []string
	for _, v := range variants.Generate(evs, 3, variants.Options{Codec: c, Variator: c.Abilities().Variation, Budget: 200, Seed: 1}) {
		if v.Kind == "transplant" {
			got = append(got, v.Description)
		}
	}
	// The same name first, the nearest first; then other names. The
	// path id 7 is no trigger: step 1 carries it too.
	want := []string{
		`step 4 (after the failure): query page "3" → "999999999999", step 3's query page carried over`,
		`step 1 (before the failure): query page "2" → "999999999999", step 3's query page carried over`,
		`step 4 (after the failure): query size "5" → "999999999999", step 3's query page carried over`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("transplants:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Inside another script: the number a call site passes takes the
// trigger, the changed script run as the step ran it.
func TestTransplantsIntoScriptSites(t *testing.T) {
	evs, keys := session(
		[]string{"EVAL", "return redis.call('EXPIRE', KEYS[1], 60)", "1", "k"},
		[]string{"INCRBY", "counter", "10000000000000"},
	)
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: transplantSchema, Budget: 200, Seed: 1, Keys: keys}
	var found bool
	for _, v := range variants.Generate(evs, 2, o) {
		if v.Kind != "transplant" || !strings.Contains(v.Description, "script site") {
			continue
		}
		found = true
		want := `step 1 (before the failure): script site 1, redis.call("EXPIRE", …) argument 2 60 → 10000000000000, step 2's argument 2 (increment) carried over`
		if v.Description != want || v.FailsAt != 1 {
			t.Errorf("got %q at %d, want %q at 1", v.Description, v.FailsAt, want)
		}
		if !strings.Contains(string(v.Events[1].Data), "redis.call('EXPIRE', KEYS[1], (10000000000000))") {
			t.Errorf("step 1 sent as %q", v.Events[1].Data)
		}
	}
	if !found {
		t.Error("no transplant into the script's call site")
	}
}
