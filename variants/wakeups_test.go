package variants_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/variants"
)

// woken is a blocked pop woken by another connection: connection 1
// sends BLMPOP 0 1 jobs LEFT COUNT 5 (step 2) and waits; connection 2
// pushes two elements (step 3), which wake it; then connection 2 reads
// an unrelated key (step 4, after the answer).
func woken() ([]kavach.Event, [][]string) {
	var evs []kavach.Event
	add := func(conn uint64, dir kavach.Direction, at time.Duration, data string) {
		evs = append(evs, kavach.Event{Seq: uint64(len(evs) + 1), Conn: conn, Dir: dir, Offset: at, Data: []byte(data)})
	}
	cmd := func(args ...string) string {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		return string(redis.AppendCommand(nil, b...))
	}
	add(1, kavach.Request, 1*time.Millisecond, cmd("SET", "other", "x"))
	add(1, kavach.Response, 2*time.Millisecond, "+OK\r\n")
	add(1, kavach.Request, 3*time.Millisecond, cmd("BLMPOP", "0", "1", "jobs", "LEFT", "COUNT", "5"))
	add(2, kavach.Request, 300*time.Millisecond, cmd("RPUSH", "jobs", "a", "b"))
	add(2, kavach.Response, 301*time.Millisecond, ":2\r\n")
	add(1, kavach.Response, 302*time.Millisecond, "-ERR woken with fewer elements than COUNT\r\n")
	add(2, kavach.Request, 400*time.Millisecond, cmd("GET", "other"))
	add(2, kavach.Response, 401*time.Millisecond, "$1\r\nx\r\n")
	return evs, [][]string{{"other"}, {"jobs"}, {"jobs"}, {"other"}}
}

func TestWakeupVariants(t *testing.T) {
	evs, keys := woken()
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Budget: 64, Seed: 1, Keys: keys}
	vs := variants.Generate(evs, 2, o)
	got := map[string]variants.Variant{}
	for _, v := range vs {
		if v.Kind == "wakeup" {
			got[v.Description] = v
			if !v.Regression {
				t.Errorf("wake-up variant %q is not a regression variant", v.Description)
			}
		}
	}
	want := []string{
		`wake-up: step 2 (BLMPOP "0" "1" "jobs" "LEFT" "COUNT" "5"): argument 6 "5" → "1", its wakers kept`,
		`wake-up: step 2 (BLMPOP "0" "1" "jobs" "LEFT" "COUNT" "5"): argument 6 "5" → "4", its wakers kept`,
		`wake-up: step 2 (BLMPOP "0" "1" "jobs" "LEFT" "COUNT" "5"): argument 6 "5" → "6", its wakers kept`,
		`wake-up: step 2 (BLMPOP "0" "1" "jobs" "LEFT" "COUNT" "5"): argument 6 "5" → "10", its wakers kept`,
		`wake-up: step 2 (BLMPOP "0" "1" "jobs" "LEFT" "COUNT" "5"): argument 1 "0" → "3600000", its wakers kept`,
		`wake-up: step 3 (RPUSH "jobs" "a" "b"), which woke or fed step 2, dropped; step 2's argument 1 "0" → "1", so that it wakes`,
		`wake-up: step 3 (RPUSH "jobs" "a" "b"), which woke or fed step 2, sent 1s later`,
		`wake-up: step 3 (RPUSH "jobs" "a" "b"), which woke or fed step 2, delivered twice`,
	}
	var names []string
	for d := range got {
		names = append(names, d)
	}
	slices.Sort(names)
	for _, w := range want {
		if _, ok := got[w]; !ok {
			t.Errorf("no wake-up variant %q; have\n%s", w, strings.Join(names, "\n"))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d wake-up variants, want %d (step 4, another key and after the answer, wakes nothing):\n%s", len(got), len(want), strings.Join(names, "\n"))
	}
	// Kept whole: the woken request's answer, and what follows, are compared.
	v := got[want[0]]
	if n := len(v.Origin); n != 4 {
		t.Errorf("count variant has %d steps, want the recording's 4", n)
	}
	if c, _ := redis.ParseCommand(v.Events[2].Data); string(c.Args[6]) != "1" {
		t.Errorf("count variant's step 2 is %q", v.Events[2].Data)
	}
	d := got[want[5]]
	for _, ev := range d.Events {
		if c, _ := redis.ParseCommand(ev.Data); ev.Dir == kavach.Request && c.Name == "RPUSH" {
			t.Errorf("dropped variant still pushes: %q", ev.Data)
		}
	}
	l := got[want[6]]
	if l.Events[3].Offset != 1300*time.Millisecond || l.Events[2].Offset != 3*time.Millisecond {
		t.Errorf("delayed variant: push at %v, pop at %v; want 1.3s and 3ms", l.Events[3].Offset, l.Events[2].Offset)
	}

	// Switched off, none is made; a request answered before any other
	// connection spoke blocked on nothing: none either.
	o.Exclude = []string{"wakeup"}
	for _, v := range variants.Generate(evs, 2, o) {
		if v.Kind == "wakeup" {
			t.Fatalf("excluded, yet made: %s", v.Description)
		}
	}
	o.Exclude = nil
	evs[3].Offset, evs[4].Offset, evs[5].Offset = 303*time.Millisecond, 304*time.Millisecond, 302*time.Millisecond
	evs[3], evs[4], evs[5] = evs[5], evs[3], evs[4]
	for _, v := range variants.Generate(evs, 2, o) {
		if v.Kind == "wakeup" {
			t.Fatalf("answered before the push, yet a wake-up variant: %s", v.Description)
		}
	}
}

// The wake-up variants share the budget: the total stays what it was.
func TestWakeupsShareTheBudget(t *testing.T) {
	evs, keys := woken()
	for _, budget := range []int{4, 10, 64} {
		vs := variants.Generate(evs, 2, variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Budget: budget, Seed: 1, Keys: keys})
		if len(vs) > budget {
			t.Errorf("budget %d: %d variants", budget, len(vs))
		}
	}
}

// metricsFed is an HTTP session whose last request reads the metrics
// page: the earlier requests name other paths, yet feed it.
func metricsFed() ([]kavach.Event, [][]string) {
	reqs := []string{
		"POST /api/v1/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"name\":\"a\"}\n",
		"DELETE /api/v1/items/7 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
	}
	evs := httpSession(reqs...)
	keys, _, _ := axum.Integration{}.Keys(context.Background(), "", [][]byte{[]byte(reqs[0]), []byte(reqs[1]), []byte(reqs[2])})
	return evs, keys
}

func TestAggregateVariants(t *testing.T) {
	evs, keys := metricsFed()
	c := axum.Integration{}
	o := variants.Options{Codec: c, Variator: c.Abilities().Variation, Budget: 500, Seed: 1, Keys: keys}
	var fed []string
	for _, v := range variants.Generate(evs, 3, o) {
		if v.Kind == "aggregate" {
			fed = append(fed, v.Description)
			if want := variants.PlaceWriter; !v.Regression && v.Place != want {
				t.Errorf("%s: place %s, want %s", v.Description, v.Place, want)
			}
		} else if v.Place != variants.PlaceFailing {
			t.Errorf("%s (%s): an earlier request varied by another kind", v.Description, v.Kind)
		}
	}
	text := strings.Join(fed, "\n")
	for _, want := range []string{
		`step 2 (before the failure, feeding the aggregate it reads): path segment 4 "7" → "1"`,
		`step 1 (POST /api/v1/items {"name":"a"}), feeding the aggregate step 3 reads, delivered twice`,
		`step 2 (DELETE /api/v1/items/7), feeding the aggregate step 3 reads, dropped`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no aggregate variant %q among:\n%s", want, text)
		}
	}
	// Switched off, or a failing request that reads one path: the
	// earlier requests on other paths are left out, as before.
	o.Exclude = []string{"aggregate"}
	for _, v := range variants.Generate(evs, 3, o) {
		if v.Place != variants.PlaceFailing {
			t.Errorf("excluded, yet an earlier request varied: %s (%s)", v.Description, v.Kind)
		}
	}
	evs[4].Data = []byte("GET /api/v1/other HTTP/1.1\r\nHost: x\r\n\r\n")
	keys[2] = []string{"/api/v1/other"}
	o.Exclude = nil
	for _, v := range variants.Generate(evs, 3, o) {
		if v.Kind == "aggregate" {
			t.Fatalf("a plain read, yet an aggregate variant: %s", v.Description)
		}
	}
}

// Redis's aggregates name no key: every earlier step already reaches the
// budget, now as a writer.
func TestRedisAggregatePlacesWriters(t *testing.T) {
	evs, keys := session([]string{"SET", "a", "1"}, []string{"LPUSH", "b", "x"}, []string{"DBSIZE"})
	for _, v := range variants.Generate(evs, 3, variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Budget: 64, Seed: 1, Keys: keys}) {
		if v.Place == variants.PlaceOther {
			t.Errorf("%s: placed other, want writer (DBSIZE reads what every write feeds)", v.Description)
		}
	}
	c := redis.Integration{}
	for cmd, want := range map[string]bool{"DBSIZE": true, "INFO": true, "SCAN": true, "GET": false} {
		if got := c.ReadsAggregate(redis.AppendCommand(nil, []byte(cmd))); got != want {
			t.Errorf("ReadsAggregate(%s) = %v", cmd, got)
		}
	}
}

// A blocked request with a timeout: the timeout variant waits for ever,
// a dropped waker leaves the timeout to fire, and a delayed one comes
// to a request that waits for ever, so that no race with the timeout
// decides what it answers.
func TestWakeupVariantsWithATimeout(t *testing.T) {
	evs, keys := woken()
	evs[2].Data = redis.AppendCommand(nil, []byte("BLMPOP"), []byte("5"), []byte("1"), []byte("jobs"), []byte("LEFT"), []byte("COUNT"), []byte("5"))
	var got []string
	for _, v := range variants.Generate(evs, 2, variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Budget: 64, Seed: 1, Keys: keys}) {
		if v.Kind != "wakeup" {
			continue
		}
		got = append(got, v.Description)
		if strings.Contains(v.Description, "sent 1s later") {
			if c, _ := redis.ParseCommand(v.Events[2].Data); string(c.Args[1]) != "0" {
				t.Errorf("delayed variant's pop: %q, want timeout 0", v.Events[2].Data)
			}
		}
	}
	for _, want := range []string{
		`wake-up: step 2 (BLMPOP "5" "1" "jobs" "LEFT" "COUNT" "5"): argument 1 "5" → "0", its wakers kept`,
		`wake-up: step 3 (RPUSH "jobs" "a" "b"), which woke or fed step 2, dropped`,
		`wake-up: step 3 (RPUSH "jobs" "a" "b"), which woke or fed step 2, sent 1s later; step 2's argument 1 "5" → "0", so that the waker wakes it`,
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no wake-up variant %q among:\n%s", want, strings.Join(got, "\n"))
		}
	}
}

// A waker dropped, the woken request given a short timeout: what comes
// from its recorded answer on is sent two seconds later, past the
// timeout, so that the other connections' requests still come after it
// answers (the recorded order); what came before is not moved.
func TestDroppedWakerKeepsTheOrder(t *testing.T) {
	evs, keys := woken()
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Budget: 64, Seed: 1, Keys: keys}
	for _, v := range variants.Generate(evs, 2, o) {
		if !strings.Contains(v.Description, "dropped; step 2's") {
			continue
		}
		events, _ := v.Build()
		var got []time.Duration
		for _, e := range events {
			got = append(got, e.Offset)
		}
		want := []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 2302 * time.Millisecond, 2400 * time.Millisecond, 2401 * time.Millisecond}
		if !slices.Equal(got, want) {
			t.Errorf("%s: offsets %v, want %v", v.Description, got, want)
		}
		return
	}
	t.Fatal("no dropped-waker variant")
}
