package variants_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/variants"
)

// session records commands on one connection, each answered +OK, and
// returns the events and each step's keys (its first argument, or none
// for a command of the whole server).
func session(commands ...[]string) ([]kavach.Event, [][]string) {
	evs := []kavach.Event{{Seq: 1, Conn: 1, Dir: kavach.Open}}
	var keys [][]string
	for i, c := range commands {
		b := make([][]byte, len(c))
		for j, a := range c {
			b[j] = []byte(a)
		}
		at := time.Duration(i+1) * time.Millisecond
		evs = append(evs, kavach.Event{Seq: uint64(len(evs) + 1), Conn: 1, Dir: kavach.Request, Offset: at, Data: redis.AppendCommand(nil, b...)},
			kavach.Event{Seq: uint64(len(evs) + 2), Conn: 1, Dir: kavach.Response, Offset: at, Data: []byte("+OK\r\n")})
		k := []string{}
		if len(c) > 1 && c[0] != "FLUSHALL" {
			k = []string{c[1]}
		}
		keys = append(keys, k)
	}
	return evs, keys
}

// The budget goes where the failure lives: the failing request first,
// then the earlier requests that write a key it names, then the others
// that may affect it; a request on other keys only gets none.
func TestBudgetWhereTheFailureLives(t *testing.T) {
	evs, keys := session(
		[]string{"SET", "counter", "10"},    // 1: writes counter
		[]string{"SET", "other", "hello"},   // 2: other key: cannot affect step 6
		[]string{"GET", "counter"},          // 3: names counter, writes nothing
		[]string{"FLUSHALL"},                // 4: no key: the whole server
		[]string{"INCRBY", "counter", "5"},  // 5: writes counter
		[]string{"INCRBY", "counter", "-3"}, // 6: fails
	)
	schema := redis.Schema{"SET": {{Name: "key", Type: "key"}, {Name: "value", Type: "string"}},
		"INCRBY": {{Name: "key", Type: "key"}, {Name: "increment", Type: "integer"}}, "GET": {{Name: "key", Type: "key"}}}
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: schema, Budget: 200, Seed: 1, Keys: keys}
	vs := variants.Generate(evs, 6, o)
	places := map[string]int{}
	regressed := map[string]bool{}
	for _, v := range vs {
		places[v.Place]++
		if strings.Contains(v.Description, "step 2 ") || strings.HasPrefix(v.Description, "regression: step 2:") {
			t.Errorf("variant %d mutates step 2, on another key: %s", v.K, v.Description)
		}
		if v.Regression {
			regressed[strings.SplitN(v.Description, ":", 3)[1]] = true
		}
		want := ""
		switch {
		case v.Regression:
			want = variants.PlaceRegression
		case strings.HasPrefix(v.Description, "step 6:") || strings.HasPrefix(v.Description, "step 6 ") || strings.HasPrefix(v.Description, "the clock"):
			want = variants.PlaceFailing
		case strings.HasPrefix(v.Description, "step 1 ") || strings.HasPrefix(v.Description, "step 5 "):
			want = variants.PlaceWriter
		case strings.HasPrefix(v.Description, "step 3 ") || strings.HasPrefix(v.Description, "step 4 "):
			want = variants.PlaceOther
		}
		if v.Place != want {
			t.Errorf("variant %d (%s) at %q, want %q", v.K, v.Description, v.Place, want)
		}
	}
	for _, p := range []string{variants.PlaceFailing, variants.PlaceWriter, variants.PlaceOther, variants.PlaceRegression} {
		if places[p] == 0 {
			t.Errorf("no variant at %s: %v", p, places)
		}
	}

	// Regression variants go to the same steps as the other earlier-step
	// mutations: not to step 2 (step 4, FLUSHALL, has no argument to
	// mutate).
	if want := map[string]bool{" step 1": true, " step 3": true, " step 5": true}; fmt.Sprint(regressed) != fmt.Sprint(want) {
		t.Errorf("regression variants of %v, want of steps 1, 3, 5", regressed)
	}
	// A contract has no failing request: every step (with arguments) gets
	// regression variants, the one on another key too.
	regressed = map[string]bool{}
	for _, v := range variants.Regression(evs, o) {
		regressed[strings.SplitN(v.Description, ":", 3)[1]] = true
	}
	if len(regressed) != 5 || !regressed[" step 2"] {
		t.Errorf("contract: regression variants of %v, want of every step but FLUSHALL's", regressed)
	}

	// A small budget: the failing request first, then the writers; the
	// other steps get what is left.
	small := variants.Generate(evs, 6, variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: schema, Budget: 16, Seed: 1, Keys: keys})
	count := map[string]int{}
	for _, v := range small {
		count[v.Place]++
	}
	if !(count[variants.PlaceFailing] > count[variants.PlaceWriter] && count[variants.PlaceWriter] > count[variants.PlaceOther]) {
		t.Errorf("budget of 16 spent %v: want the failing request, then its keys' writers, then the others", count)
	}

	// Without the steps' keys, every earlier step may affect the failure.
	o.Keys = nil
	for _, v := range variants.Generate(evs, 6, o) {
		if v.Place == variants.PlaceWriter {
			t.Errorf("keys unknown, yet variant %d (%s) is a writer's", v.K, v.Description)
		}
		if strings.Contains(v.Description, "step 2 ") {
			return
		}
	}
	t.Error("keys unknown: no variant of step 2")
}

// A long recording: mutations of a sample of its earlier steps, the same
// sample for one seed.
func TestLongRecordingSampled(t *testing.T) {
	var commands [][]string
	for i := 0; i < 300; i++ {
		commands = append(commands, []string{"SET", "k", fmt.Sprint(i)})
	}
	evs, keys := session(commands...)
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Budget: 8, Seed: 3, Keys: keys}
	a, b := variants.Generate(evs, 300, o), variants.Generate(evs, 300, o)
	if fmt.Sprint(descriptions(a)) != fmt.Sprint(descriptions(b)) {
		t.Error("one seed gave two sets of variants")
	}
	if len(a) != 8 {
		t.Errorf("%d variants, want 8", len(a))
	}
}

// A query parameter the failing request sends as text, which another
// request of its kind sent as a number, is varied as a number too.
func TestFieldsTypedFromTheRecording(t *testing.T) {
	evs := httpSession("GET /items?page=2 HTTP/1.1\r\nHost: x\r\n\r\n", "GET /items?page=last HTTP/1.1\r\nHost: x\r\n\r\n")
	c := axum.Integration{}
	var numeric []string
	for _, v := range variants.Generate(evs, 2, variants.Options{Codec: c, Variator: c.Abilities().Variation, Budget: 200, Seed: 1}) {
		if strings.HasPrefix(v.Description, "step 2: query page ") && strings.Contains(v.Description, "typed as at step 1") {
			numeric = append(numeric, v.Description)
		}
	}
	if len(numeric) < 5 || !slices.ContainsFunc(numeric, func(d string) bool { return strings.Contains(d, `→ "9223372036854775807"`) }) {
		t.Errorf("page, a number at step 1, varied as a number at step 2: %q", numeric)
	}
}

// An HTTP request's variants are described in HTTP's words: a header, a
// path segment, a query parameter; never Redis's arguments and keys.
func TestHTTPWords(t *testing.T) {
	evs := httpSession(
		"POST /lists/groceries/items HTTP/1.1\r\nHost: x\r\nX-Note: buy milk\r\nContent-Length: 0\r\n\r\n",
		"GET /lists/chores/items?page=2 HTTP/1.1\r\nHost: x\r\nX-Note: soon\r\n\r\n",
	)
	c := axum.Integration{}
	var all []string
	for _, v := range variants.Generate(evs, 2, variants.Options{Codec: c, Variator: c.Abilities().Variation, Budget: 500, Seed: 1}) {
		all = append(all, v.Description)
	}
	text := strings.Join(all, "\n")
	for _, redis := range []string{"argument ", "a key that does not exist", "recorded key"} {
		if strings.Contains(text, redis) {
			t.Errorf("HTTP variants described in Redis's words (%q):\n%s", redis, text)
		}
	}
	for _, want := range []string{
		`step 2: header X-Note "soon" → "buy milk", a value seen in the recording`,
		`step 2: path segment 2 "chores" → "kavach:missing-key", a path segment no recorded request names`,
		`step 2: path segment 2 "chores" → "groceries", another path segment the recording shows`,
		`step 2: query page "2" → "3"`,
	} {
		if !slices.Contains(all, want) {
			t.Errorf("no variant %q among:\n%s", want, text)
		}
	}
}

// httpSession is the HTTP requests sent on one connection a millisecond
// apart, each answered 200 with an empty body.
func httpSession(reqs ...string) []kavach.Event {
	var evs []kavach.Event
	for i, req := range reqs {
		at := time.Duration(i) * time.Millisecond
		evs = append(evs,
			kavach.Event{Seq: uint64(len(evs) + 1), Conn: 1, Dir: kavach.Request, Offset: at, Data: []byte(req)},
			kavach.Event{Seq: uint64(len(evs) + 2), Conn: 1, Dir: kavach.Response, Offset: at,
				Data: []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")})
	}
	return evs
}

// A writer of a writer's input is a writer too (the dependency slice's
// writers, transitively), and which keys a step writes is what the build
// says when it says it (Options.Writes): COPY tmp greeting writes
// greeting and reads tmp, so SET tmp is a writer of what the failing
// GETRANGE reads; SET unrelated is not.
func TestWritersTransitively(t *testing.T) {
	evs, keys := session(
		[]string{"SET", "tmp", "hello world"},      // 1: writes tmp, which step 3 reads
		[]string{"SET", "unrelated", "x"},          // 2: another key
		[]string{"COPY", "tmp", "greeting"},        // 3: writes greeting, reads tmp
		[]string{"APPEND", "greeting", "!"},        // 4: writes greeting
		[]string{"GETRANGE", "greeting", "0", "4"}, // 5: fails
	)
	keys[2] = []string{"tmp", "greeting"}
	writes := [][]string{{"tmp"}, {"unrelated"}, {"greeting"}, {"greeting"}, {}}
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Budget: 1000, Seed: 1, Keys: keys, Writes: writes}
	places := map[string]string{}
	for _, v := range variants.Generate(evs, 5, o) {
		for _, s := range []string{"step 1 ", "step 2 ", "step 3 ", "step 4 "} {
			if strings.HasPrefix(v.Description, s) && v.Kind == "dropped" {
				places[strings.TrimSpace(s)] = v.Place
			}
		}
	}
	want := map[string]string{"step 1": variants.PlaceWriter, "step 3": variants.PlaceWriter, "step 4": variants.PlaceWriter}
	if fmt.Sprint(places) != fmt.Sprint(want) {
		t.Errorf("places of the earlier steps (by their dropped variants): %v, want %v", places, want)
	}
	// Without the build's word, the codec's list decides: it does not
	// know COPY writes greeting, so neither COPY nor SET tmp is a writer.
	o.Writes = nil
	places = map[string]string{}
	for _, v := range variants.Generate(evs, 5, o) {
		if strings.HasPrefix(v.Description, "step 1 ") && v.Kind == "dropped" {
			places["step 1"] = v.Place
		}
	}
	if places["step 1"] == variants.PlaceWriter {
		t.Errorf("without the build's writes, SET tmp is a writer: the codec knows COPY's writes after all (update the test)")
	}
}
