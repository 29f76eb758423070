package redis

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kavach-dev/kavach"
)

// learn asks a real build about the commands given.
func learn(t *testing.T, kinds ...string) *Learned {
	t.Helper()
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	s, err := Integration{}.Learn(context.Background(), p.Addr(), kinds)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Learned)
}

func rewrites(l *Learned, args ...string) []string {
	var out []string
	for _, s := range (Integration{}).Rewrites(cmd(args...), l) {
		out = append(out, s.What+" | "+Integration{}.DescribeRequest(s.Request, 0))
	}
	return out
}

// The grammar is COMMAND DOCS of the build, taken whole: blocks, oneof,
// optional and repeated parts (docs/variants.md shows these three).
func TestRewritesFromTheWholeGrammar(t *testing.T) {
	l := learn(t, "SET", "ZADD", "LPOS")
	for _, tc := range []struct {
		req  []string
		want []string
	}{{
		// SET key value [NX | XX] [GET] [EX seconds | PX milliseconds |
		//   EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]
		req: []string{"SET", "k", "v", "EX", "10"},
		want: []string{
			`optional "NX" (condition) added | SET "k" "v" "NX" "EX" "10"`,
			`optional "XX" (condition) added | SET "k" "v" "XX" "EX" "10"`,
			`optional "GET" (get) added | SET "k" "v" "GET" "EX" "10"`,
			`"EX" "10" → "PX" "10" (another choice of expiration) | SET "k" "v" "PX" "10"`,
			`"EX" "10" → "EXAT" "10" (another choice of expiration) | SET "k" "v" "EXAT" "10"`,
			`"EX" "10" → "PXAT" "10" (another choice of expiration) | SET "k" "v" "PXAT" "10"`,
			`"EX" "10" → "KEEPTTL" (another choice of expiration) | SET "k" "v" "KEEPTTL"`,
			`optional "EX" "10" (expiration) dropped | SET "k" "v"`,
		},
	}, {
		// ZADD key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]
		req: []string{"ZADD", "z", "XX", "1", "a", "2", "b"},
		want: []string{
			`"XX" → "NX" (another choice of condition) | ZADD "z" "NX" "1" "a" "2" "b"`,
			`optional "XX" (condition) dropped | ZADD "z" "1" "a" "2" "b"`,
			`optional "GT" (comparison) added | ZADD "z" "XX" "GT" "1" "a" "2" "b"`,
			`optional "LT" (comparison) added | ZADD "z" "XX" "LT" "1" "a" "2" "b"`,
			`optional "CH" (change) added | ZADD "z" "XX" "CH" "1" "a" "2" "b"`,
			`optional "INCR" (increment) added | ZADD "z" "XX" "INCR" "1" "a" "2" "b"`,
			`repeated "2" "b" (score_member) once more | ZADD "z" "XX" "1" "a" "2" "b" "2" "b"`,
		},
	}, {
		// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
		req: []string{"LPOS", "l", "x", "COUNT", "0"},
		want: []string{
			`optional "RANK" "100" (rank) added | LPOS "l" "x" "RANK" "100" "COUNT" "0"`,
			`optional "COUNT" "0" (num-matches) dropped | LPOS "l" "x"`,
			`optional "MAXLEN" "100" (len) added | LPOS "l" "x" "COUNT" "0" "MAXLEN" "100"`,
		},
	}} {
		if diff := cmp.Diff(tc.want, rewrites(l, tc.req...)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", strings.Join(tc.req, " "), diff)
		}
	}
	// Out of the documented order (Redis takes SET's options in any
	// order), or not the grammar at all: none.
	for _, req := range [][]string{{"SET", "k", "v", "GET", "NX"}, {"ZADD", "z", "1"}, {"SET", "k"}, {"NOSUCH", "x"}} {
		if got := rewrites(l, req...); len(got) != 0 {
			t.Errorf("%v: %q, want none", req, got)
		}
	}
}

// Deep or wide grammars never make the matcher hang: its work is bounded.
func TestMatchIsBounded(t *testing.T) {
	opt := ArgSpec{Name: "o", Type: "string", Optional: true, Multiple: true}
	specs := []ArgSpec{opt, opt, opt, opt, opt, opt, {Name: "end", Type: "pure-token", Token: "END"}}
	args := make([]string, 200)
	for i := range args {
		args[i] = "x"
	}
	if _, ok := match(specs, args); ok {
		t.Error("matched arguments without the END token")
	}
}

// fuzzGrammar is SET's and ZADD's grammar as Redis 7.0 documents them.
var fuzzGrammar = &Learned{Args: Schema{
	"SET": {{Name: "key", Type: "key"}, {Name: "value", Type: "string"},
		{Name: "condition", Type: "oneof", Optional: true, Args: []ArgSpec{{Name: "nx", Type: "pure-token", Token: "NX"}, {Name: "xx", Type: "pure-token", Token: "XX"}}},
		{Name: "get", Type: "pure-token", Token: "GET", Optional: true},
		{Name: "expiration", Type: "oneof", Optional: true, Args: []ArgSpec{{Name: "seconds", Type: "integer", Token: "EX"},
			{Name: "milliseconds", Type: "integer", Token: "PX"}, {Name: "keepttl", Type: "pure-token", Token: "KEEPTTL"}}}},
	"ZADD": {{Name: "key", Type: "key"},
		{Name: "condition", Type: "oneof", Optional: true, Args: []ArgSpec{{Name: "nx", Type: "pure-token", Token: "NX"}, {Name: "xx", Type: "pure-token", Token: "XX"}}},
		{Name: "score_member", Type: "block", Multiple: true, Args: []ArgSpec{{Name: "score", Type: "double"}, {Name: "member", Type: "string"}}}},
	"SORT": {{Name: "key", Type: "key"}, {Name: "pattern", Type: "pattern", Token: "GET", Optional: true, Multiple: true, MultipleToken: true}},
}}

// Any request: no panic, no hang, and every rewrite a command of the
// same name.
func FuzzRewrites(f *testing.F) {
	for _, s := range []string{"SET k v EX 10", "SET k v NX GET PX 5", "ZADD z XX 1 a 2 b 3 c", "SORT s GET a GET b", "SET k", "ZADD z 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words := strings.Fields(s)
		if len(words) == 0 {
			return
		}
		for _, r := range (Integration{}).Rewrites(cmd(words...), fuzzGrammar) {
			c, err := ParseCommand(r.Request)
			if err != nil || !strings.EqualFold(c.Name, words[0]) {
				t.Fatalf("%q: rewrite %q (%s) is not a %s command: %v", s, r.Request, r.What, words[0], err)
			}
		}
	})
}

// A repeated value stops at a token of the grammar: the arguments after
// WEIGHTS are weights, not more keys.
func TestRepeatedValuesStopAtTokens(t *testing.T) {
	l := learn(t, "ZUNIONSTORE")
	got := rewrites(l, "ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "-1")
	want := `repeated "-1" (weight) once more | ZUNIONSTORE "d" "2" "a" "b" "WEIGHTS" "1" "-1" "-1"`
	found := false
	for _, g := range got {
		found = found || g == want
		if strings.Contains(g, "(key) once more") && strings.Contains(g, `"-1" (key)`) {
			t.Errorf("a weight taken as a key: %s", g)
		}
	}
	if !found {
		t.Errorf("no %q among:\n%s", want, strings.Join(got, "\n"))
	}
}

// TestMatchManyRepetitionsLinear: a part repeated a thousand times (a
// ZADD of 2,000 arguments) is matched with its repetitions in order, and
// matching it allocates a few megabytes, not the hundreds a copy of the
// repetitions so far per repetition took.
func TestMatchManyRepetitionsLinear(t *testing.T) {
	specs := fuzzGrammar.Args["ZADD"]
	args := []string{"z"}
	for i := range 1000 {
		args = append(args, strconv.Itoa(i), "m"+strconv.Itoa(i))
	}
	var parts []part
	var ok bool
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	parts, ok = match(specs, args)
	runtime.ReadMemStats(&b)
	if !ok {
		t.Fatal("ZADD of 1,000 pairs not matched")
	}
	var reps [][2]int
	for _, p := range parts {
		if p.spec.Name == "score_member" {
			reps = p.reps
		}
	}
	if len(reps) != 1000 || reps[0] != [2]int{1, 3} || reps[999] != [2]int{1999, 2001} {
		t.Fatalf("score_member repetitions: %d, first %v, last %v; want 1000, [1 3], [1999 2001]", len(reps), reps[:min(1, len(reps))], reps[max(0, len(reps)-1):])
	}
	if n := b.TotalAlloc - a.TotalAlloc; n > 16<<20 {
		t.Fatalf("matching allocated %d MB, want < 16 MB", n>>20)
	}
}
