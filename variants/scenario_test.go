package variants_test

import (
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/variants"
)

// siblingOptions are options for every variant of a recording whose
// steps' keys are keys, on a build that has commands and writes lists
// and sorted sets.
func siblingOptions(keys [][]string, commands ...string) variants.Options {
	l := &redis.Learned{
		Types:    []redis.TypeWrite{{Type: "list", Write: []string{"RPUSH", "", "alpha", "beta"}}, {Type: "zset", Write: []string{"ZADD", "", "1", "alpha"}}},
		Commands: map[string]bool{},
	}
	for _, c := range commands {
		l.Commands[c] = true
	}
	return variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: l, Budget: 1000, Seed: 1, Keys: keys}
}

// A sibling of a woken pop on a key of another type carries its
// scenario: the push that woke the recorded BLMPOP (another connection,
// step 3) pushes into the sibling's key as its type, and the sibling
// waits as long as the recorded request did, instead of finding the
// type's default content there and answering at once.
func TestSiblingCarriesItsScenario(t *testing.T) {
	evs, keys := woken()
	o := siblingOptions(keys, "BLMPOP", "BZMPOP", "LMPOP", "ZMPOP", "BLPOP", "BZPOPMIN")
	var found bool
	var siblings []string
	for _, v := range variants.Generate(evs, 2, o) {
		if v.Kind != "sibling" {
			continue
		}
		siblings = append(siblings, v.Description)
		if !strings.Contains(v.Description, "BZMPOP") {
			continue
		}
		found = true
		if want := `step 2: BLMPOP → BZMPOP (pops): BZMPOP "0" "1" "kavach:sibling:zset" "MIN" "COUNT" "5"; its scenario: woken by step 3 as zset, the recorded timeout`; v.Description != want {
			t.Errorf("description %s\nwant %s", v.Description, want)
		}
		steps := kavach.Steps(v.Events, redis.Integration{})
		var got []string
		for _, s := range steps {
			got = append(got, (redis.Integration{}).DescribeRequest(s.Request.Data, 0))
		}
		want := []string{`SET "other" "x"`, `BZMPOP "0" "1" "kavach:sibling:zset" "MIN" "COUNT" "5"`, `ZADD "kavach:sibling:zset" "0" "a" "1" "b"`, `GET "other"`}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: steps\n%s\nwant\n%s", v.Description, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if !found {
		t.Fatalf("no BZMPOP sibling among:\n%s", strings.Join(siblings, "\n"))
	}
}

// Translate writes a list, set or sorted set write's elements into
// another key as another type, and nothing else.
func TestTranslate(t *testing.T) {
	cmd := func(args ...string) []byte {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		return redis.AppendCommand(nil, b...)
	}
	in := redis.Integration{}
	for _, c := range []struct {
		req  []byte
		typ  string
		want string // "" for none
	}{
		{cmd("RPUSH", "q", "a", "b"), "zset", `ZADD "to" "0" "a" "1" "b"`},
		{cmd("LPUSH", "q", "a"), "list", `LPUSH "to" "a"`},
		{cmd("ZADD", "q", "NX", "5", "a", "7", "b"), "list", `RPUSH "to" "a" "b"`},
		{cmd("ZADD", "q", "5", "a", "7", "b"), "zset", `ZADD "to" "5" "a" "7" "b"`},
		{cmd("SADD", "q", "m"), "set", `SADD "to" "m"`},
		{cmd("ZADD", "q", "INCR", "5", "a"), "list", ""},
		{cmd("SET", "q", "v"), "list", ""},
		{cmd("RPUSH", "other", "a"), "zset", ""},
		{cmd("RPUSH", "q", "a"), "hash", ""},
		{cmd("RPUSH", "q"), "list", ""},
		{[]byte("*1\r\n$5\r\nRP"), "list", ""},
	} {
		out, ok := in.Translate(c.req, "q", "to", c.typ)
		got := ""
		if ok {
			got = in.DescribeRequest(out, 0)
		}
		if got != c.want {
			t.Errorf("Translate(%q, %s) = %q, want %q", c.req, c.typ, got, c.want)
		}
	}
}

// A sibling on another type gets the recorded key's writers written
// into its key as its type, instead of the type's default content.
func TestSiblingGetsTheWritersAsItsType(t *testing.T) {
	evs, keys := session(
		[]string{"RPUSH", "q", "a", "b"}, // 1: writes q
		[]string{"SET", "other", "x"},    // 2: another key
		[]string{"LPUSH", "q", "c"},      // 3: writes q
		[]string{"LRANGE", "q", "0", "-1"},
	)
	o := siblingOptions(keys, "LRANGE", "ZRANGE", "GETRANGE", "SUBSTR", "ZREVRANGE")
	var descs []string
	for _, v := range variants.Generate(evs, 4, o) {
		if v.Kind != "sibling" {
			continue
		}
		descs = append(descs, v.Description)
		if !strings.HasPrefix(v.Description, "step 4: LRANGE → ZRANGE") {
			continue
		}
		if !strings.HasSuffix(v.Description, "its scenario: step 1, step 3 written as zset") {
			t.Errorf("description %s: want its scenario (steps 1 and 3 written as zset)", v.Description)
		}
		var got []string
		for _, s := range kavach.Steps(v.Events, redis.Integration{}) {
			got = append(got, (redis.Integration{}).DescribeRequest(s.Request.Data, 0))
		}
		want := []string{`RPUSH "q" "a" "b"`, `SET "other" "x"`, `LPUSH "q" "c"`, `ZADD "kavach:sibling:zset" "0" "a" "1" "b"`, `ZADD "kavach:sibling:zset" "0" "c"`, `ZRANGE "kavach:sibling:zset" "0" "-1"`}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: steps\n%s\nwant\n%s", v.Description, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		return
	}
	t.Fatalf("no ZRANGE sibling among:\n%s", strings.Join(descs, "\n"))
}
