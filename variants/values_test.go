package variants_test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/variants"
)

// expireAt is an incident whose failing request (step 2, 90 s into the
// recording) takes a Unix time: EXPIREAT session 1800000000.
func expireAt() []kavach.Event {
	var evs []kavach.Event
	add := func(dir kavach.Direction, at time.Duration, args ...string) {
		var data []byte
		if len(args) > 0 {
			b := make([][]byte, len(args))
			for i, a := range args {
				b[i] = []byte(a)
			}
			data = redis.AppendCommand(nil, b...)
		}
		evs = append(evs, kavach.Event{Seq: uint64(len(evs) + 1), Conn: 1, Dir: dir, Offset: at, Data: data})
	}
	add(kavach.Open, 0)
	add(kavach.Request, time.Second, "SET", "session", "alpha")
	add(kavach.Response, time.Second)
	add(kavach.Request, 90*time.Second, "EXPIREAT", "session", "1800000000")
	return evs
}

var expireAtSchema = &redis.Learned{Args: redis.Schema{
	"SET":      {{Name: "key", Type: "key"}, {Name: "value", Type: "string"}},
	"EXPIREAT": {{Name: "key", Type: "key"}, {Name: "unix-time-seconds", Type: "unix-time"}},
}}

// Values inside the failing request's arguments, through the Variator:
// a Unix time's "now" is the recording's start plus the request's offset,
// the time the build sees when it is replayed.
func TestValueVariants(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: expireAtSchema, Budget: 1000, Seed: 1, Start: start}
	vs := variants.Generate(expireAt(), 2, o)
	kinds := map[string]int{}
	for _, v := range vs {
		kinds[v.Kind]++
		if !slices.Contains(kavach.VariantKinds, v.Kind) {
			t.Errorf("%s: kind %q is none of kavach.VariantKinds", v.Description, v.Kind)
		}
	}
	if kinds["number-form"] < 20 || kinds["structured"] < 5 {
		t.Errorf("kinds %v: want the time's number forms and structured values", kinds)
	}
	now := fmt.Sprint(start.Add(90 * time.Second).Unix())
	want := fmt.Sprintf(`step 2: argument 2 (unix-time-seconds) "1800000000" → "%s" (now, as the build sees it)`, now)
	found := false
	for _, v := range vs {
		if v.Description == want {
			found = true
			last := kavach.Steps(v.Events, redis.Integration{})[1]
			if got := (redis.Integration{}).DescribeRequest(last.Request.Data, 0); got != `EXPIREAT "session" "`+now+`"` || v.Kind != "structured" {
				t.Errorf("%s: request %s, kind %s", want, got, v.Kind)
			}
		}
	}
	if !found {
		t.Errorf("no variant %q among:\n%s", want, strings.Join(descriptions(vs), "\n"))
	}
	// Without the start, no "now".
	o.Start = time.Time{}
	for _, v := range variants.Generate(expireAt(), 2, o) {
		if strings.Contains(v.Description, "now, as the build sees it") {
			t.Errorf("%s: without the recording's start", v.Description)
		}
	}

	// A small budget: each value kind is one group, taking its turns as
	// a field does; one seed, one set.
	o.Budget, o.Start = 16, start
	a, b := descriptions(variants.Generate(expireAt(), 2, o)), descriptions(variants.Generate(expireAt(), 2, o))
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("the same seed gave different variants:\n%s", diff)
	}
	n := 0
	for _, v := range variants.Generate(expireAt(), 2, o) {
		if v.Kind == "number-form" {
			n++
		}
	}
	if n == 0 || n > 4 {
		t.Errorf("%d number-form variants in a budget of 16, want a group's share (1 to 4)", n)
	}
}

// evalIncident is an incident whose failing request (step 2) runs a
// script: EVAL of a HINCRBY.
func evalIncident(script string) []kavach.Event {
	var evs []kavach.Event
	add := func(dir kavach.Direction, args ...string) {
		var data []byte
		if len(args) > 0 {
			b := make([][]byte, len(args))
			for i, a := range args {
				b[i] = []byte(a)
			}
			data = redis.AppendCommand(nil, b...)
		}
		evs = append(evs, kavach.Event{Seq: uint64(len(evs) + 1), Conn: 1, Dir: dir, Offset: time.Duration(len(evs)) * time.Second, Data: data})
	}
	add(kavach.Open)
	add(kavach.Request, "HSET", "stock", "apples", "10")
	add(kavach.Response)
	add(kavach.Request, "EVAL", script, "1", "stock", "apples", "-3")
	return evs
}

// Script variants through the generator: the runner's SCRIPT LOAD or
// FUNCTION LOAD is inserted right before the varied request, on its
// connection; one seed gives one set; a script Kavach cannot read is left
// whole and LeftWhole says so.
func TestScriptVariantsGenerated(t *testing.T) {
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Budget: 1000, Seed: 1}
	vs := variants.Generate(evalIncident("return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])"), 2, o)
	kinds := map[string]int{}
	for _, v := range vs {
		kinds[v.Kind]++
		if v.Kind != "runner" || !strings.Contains(v.Description, "EVALSHA") {
			continue
		}
		steps := kavach.Steps(v.Events, redis.Integration{})
		if len(steps) != 3 {
			t.Fatalf("%s: %d steps, want the SCRIPT LOAD inserted (3)", v.Description, len(steps))
		}
		load, run := redis.Integration{}.DescribeRequest(steps[1].Request.Data, 0), redis.Integration{}.DescribeRequest(steps[2].Request.Data, 0)
		if !strings.HasPrefix(load, `SCRIPT "LOAD"`) || !strings.HasPrefix(run, `EVALSHA "`) || v.Events[len(v.Events)-2].Conn != 1 {
			t.Errorf("%s: steps %s then %s", v.Description, load, run)
		}
	}
	if kinds["script-site"] == 0 || kinds["runner"] != 2 {
		t.Errorf("kinds %v: want script-site variants and two runners (EVALSHA, FCALL)", kinds)
	}

	o.Budget = 16
	a := descriptions(variants.Generate(evalIncident("return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])"), 2, o))
	b := descriptions(variants.Generate(evalIncident("return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])"), 2, o))
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("the same seed gave different variants:\n%s", diff)
	}

	unread := evalIncident("return redis.call(ARGV[3], KEYS[1], ARGV[1], ARGV[2])")
	o.Budget = 1000
	for _, v := range variants.Generate(unread, 2, o) {
		if v.Kind == "script-site" {
			t.Errorf("%s: a script Kavach cannot read is left whole", v.Description)
		}
	}
	if notes := variants.LeftWhole(unread, 2, o); len(notes) != 1 || !strings.Contains(notes[0], "the script of EVAL: ") {
		t.Errorf("LeftWhole: %q, want the script left whole, and why", notes)
	}
}

// An EVALSHA's script is in a SCRIPT LOAD sent before it, here on
// another connection: the generator gives the steps before the failing
// one to the Variator (kavach.Variation.After), so the script's sites are
// varied (the changed script loaded right before the EVALSHA, on its
// connection) and it is run through EVAL; LeftWhole and SkippedSiblings
// see the script too. A step after the failing one is not looked at.
func TestScriptLoadedEarlierGenerated(t *testing.T) {
	script := "return redis.call('GET', KEYS[1])"
	sum := sha1.Sum([]byte(script))
	sha := hex.EncodeToString(sum[:])
	frame := func(args ...string) []byte {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		return redis.AppendCommand(nil, b...)
	}
	evs := []kavach.Event{
		{Seq: 1, Conn: 1, Dir: kavach.Open},
		{Seq: 2, Conn: 1, Dir: kavach.Request, Data: frame("SCRIPT", "LOAD", script)},
		{Seq: 3, Conn: 1, Dir: kavach.Response, Data: []byte("$40\r\n" + sha + "\r\n")},
		{Seq: 4, Conn: 2, Dir: kavach.Open, Offset: time.Second},
		{Seq: 5, Conn: 2, Dir: kavach.Request, Offset: time.Second, Data: frame("EVALSHA", sha, "1", "k")},
	}
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Budget: 1000, Seed: 1}
	kinds := map[string]int{}
	for _, v := range variants.Generate(evs, 2, o) {
		kinds[v.Kind]++
		if v.Kind != "script-site" {
			continue
		}
		steps := kavach.Steps(v.Events, redis.Integration{})
		if len(steps) != 3 {
			t.Fatalf("%s: %d steps, want the changed script's SCRIPT LOAD inserted (3)", v.Description, len(steps))
		}
		load, err1 := redis.ParseCommand(steps[1].Request.Data)
		run, err2 := redis.ParseCommand(steps[2].Request.Data)
		if err1 != nil || err2 != nil || load.Name != "SCRIPT" || run.Name != "EVALSHA" || string(load.Args[2]) == script {
			t.Fatalf("%s: steps %q then %q", v.Description, steps[1].Request.Data, steps[2].Request.Data)
		}
		if sum := sha1.Sum(load.Args[2]); string(run.Args[1]) != hex.EncodeToString(sum[:]) || steps[1].Request.Conn != 2 {
			t.Errorf("%s: EVALSHA %s on connection %d after SCRIPT LOAD of %q", v.Description, run.Args[1], steps[1].Request.Conn, load.Args[2])
		}
	}
	// A read: EVAL, FCALL, EVAL_RO, EVALSHA_RO, FCALL_RO.
	if kinds["script-site"] == 0 || kinds["runner"] != 5 {
		t.Errorf("kinds %v: want script-site variants and five runners", kinds)
	}
	if notes := variants.LeftWhole(evs, 2, o); notes != nil {
		t.Errorf("LeftWhole: %q, want none: the script is found", notes)
	}
	l := &redis.Learned{Commands: map[string]bool{"EVAL": true, "EVALSHA": true, "FCALL": true}}
	o.Schema = l
	if s := variants.SkippedSiblings(evs, 2, o); !slices.Equal(s, []string{"EVAL_RO", "EVALSHA_RO", "FCALL_RO"}) {
		t.Errorf("SkippedSiblings: %v, want the _RO runners the build lacks", s)
	}

	// The SCRIPT LOAD after the failing EVALSHA: not found.
	late := []kavach.Event{evs[3], evs[4], {Seq: 6, Conn: 2, Dir: kavach.Response, Offset: time.Second, Data: []byte("-NOSCRIPT\r\n")},
		{Seq: 7, Conn: 2, Dir: kavach.Request, Offset: 2 * time.Second, Data: frame("SCRIPT", "LOAD", script)}}
	o.Schema = nil
	for _, v := range variants.Generate(late, 1, o) {
		if v.Kind == "script-site" || v.Kind == "runner" {
			t.Errorf("%s: the script is loaded only after the failing step", v.Description)
		}
	}
	if notes := variants.LeftWhole(late, 1, o); len(notes) != 1 || !strings.Contains(notes[0], "not in the request, nor sent by an earlier SCRIPT LOAD or EVAL") {
		t.Errorf("LeftWhole: %q, want the script not found", notes)
	}
}

func TestShiftSteps(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`step 3: "SET" "k" "step 3" removed`, `step 103: "SET" "k" "step 3" removed`},
		{`step 2 (GET "a\"step 1") moved before step 1`, `step 102 (GET "a\"step 1") moved before step 101`},
		{`regression: step 7: field`, `regression: step 107: field`},
		{`substep 4, step 4x, steps 5`, `substep 4, step 4x, steps 5`},
		{`taken from step 9`, `taken from step 109`},
	} {
		if got := variants.ShiftSteps(tc.in, 100); got != tc.want {
			t.Errorf("ShiftSteps(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
