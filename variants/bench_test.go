package variants_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/variants"
)

// bigIncident is a session of n steps on one connection: SETs with
// expires, GETs, INCRBYs and ZADDs over 50 keys; the last step fails.
func bigIncident(n int) []kavach.Event {
	var evs []kavach.Event
	add := func(dir kavach.Direction, data []byte) {
		evs = append(evs, kavach.Event{Seq: uint64(len(evs) + 1), Conn: 1, Dir: dir, Offset: time.Duration(len(evs)) * time.Millisecond, Data: data})
	}
	c := func(args ...string) []byte {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		return redis.AppendCommand(nil, b...)
	}
	add(kavach.Open, nil)
	for i := 1; i <= n; i++ {
		key := fmt.Sprintf("key:%d", i%50)
		switch i % 4 {
		case 0:
			add(kavach.Request, c("SET", key, fmt.Sprintf("value %d", i), "EX", "100"))
			add(kavach.Response, []byte("+OK\r\n"))
		case 1:
			add(kavach.Request, c("GET", key))
			add(kavach.Response, []byte("$-1\r\n"))
		case 2:
			add(kavach.Request, c("INCRBY", "n:"+key, "5"))
			add(kavach.Response, []byte(":5\r\n"))
		case 3:
			add(kavach.Request, c("ZADD", "z:"+key, "XX", "1", "a", "2", "b"))
			add(kavach.Response, []byte(":0\r\n"))
		}
	}
	return evs
}

// bigLearned is what Redis 7.0's COMMAND DOCS, COMMAND INFO and TYPE give
// for the commands of bigIncident.
var bigLearned = &redis.Learned{
	Args: redis.Schema{
		"GET":    {{Name: "key", Type: "key"}},
		"INCRBY": {{Name: "key", Type: "key"}, {Name: "increment", Type: "integer"}},
		"SET": {{Name: "key", Type: "key"}, {Name: "value", Type: "string"},
			{Name: "condition", Type: "oneof", Optional: true, Tokens: []string{"NX", "XX"}, Args: []redis.ArgSpec{{Name: "nx", Type: "pure-token", Token: "NX", Tokens: []string{"NX"}}, {Name: "xx", Type: "pure-token", Token: "XX", Tokens: []string{"XX"}}}},
			{Name: "get", Type: "pure-token", Token: "GET", Optional: true, Tokens: []string{"GET"}},
			{Name: "expiration", Type: "oneof", Optional: true, Tokens: []string{"EX", "PX", "KEEPTTL"}, Args: []redis.ArgSpec{
				{Name: "seconds", Type: "integer", Token: "EX", Tokens: []string{"EX"}}, {Name: "milliseconds", Type: "integer", Token: "PX", Tokens: []string{"PX"}},
				{Name: "keepttl", Type: "pure-token", Token: "KEEPTTL", Tokens: []string{"KEEPTTL"}}}}},
		"ZADD": {{Name: "key", Type: "key"},
			{Name: "condition", Type: "oneof", Optional: true, Tokens: []string{"NX", "XX"}, Args: []redis.ArgSpec{{Name: "nx", Type: "pure-token", Token: "NX", Tokens: []string{"NX"}}, {Name: "xx", Type: "pure-token", Token: "XX", Tokens: []string{"XX"}}}},
			{Name: "change", Type: "pure-token", Token: "CH", Optional: true, Tokens: []string{"CH"}},
			{Name: "score_member", Type: "block", Multiple: true, Args: []redis.ArgSpec{{Name: "score", Type: "double"}, {Name: "member", Type: "string"}}}},
	},
	Keys: map[string]redis.KeyRange{"GET": {First: 1, Last: 1, Step: 1}, "INCRBY": {First: 1, Last: 1, Step: 1},
		"SET": {First: 1, Last: 1, Step: 1}, "ZADD": {First: 1, Last: 1, Step: 1}},
	Types: []redis.TypeWrite{
		{Type: "string", Write: []string{"SET", "", "hello world"}}, {Type: "list", Write: []string{"RPUSH", "", "alpha", "beta", "gamma"}},
		{Type: "set", Write: []string{"SADD", "", "alpha", "beta", "gamma"}}, {Type: "zset", Write: []string{"ZADD", "", "1", "alpha", "2", "beta", "3", "gamma"}},
		{Type: "hash", Write: []string{"HSET", "", "name", "alpha", "count", "3"}}, {Type: "stream", Write: []string{"XADD", "", "1-1", "name", "alpha"}},
	},
}

// BenchmarkGenerate1000Steps is generation for a fixture of 1,000 steps
// with the schema, key positions and types learned: the target is under
// 50 ms per generation (docs/variants.md).
func BenchmarkGenerate1000Steps(b *testing.B) {
	evs := bigIncident(1000)
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: bigLearned, Budget: 64, Seed: 1, Keys: bigKeys(evs)}
	if vs := variants.Generate(evs, 1000, o); len(vs) != 64 {
		b.Fatalf("%d variants, want 64", len(vs))
	}
	for b.Loop() {
		variants.Generate(evs, 1000, o)
	}
}

// benchmarkGrown is generation at the default budget, which grows with
// what is applicable (Cap), on a recording of n steps failing at its
// last: the cost the first rounds add must stay linear in n (#41 item
// 6). Compare BenchmarkGenerateSteps/fixed-N with /grown-N.
func BenchmarkGenerateSteps(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		evs := bigIncident(n)
		keys := bigKeys(evs)
		for _, grown := range []bool{false, true} {
			o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: bigLearned, Budget: variants.DefaultBudget, Seed: 1, Keys: keys, Deferred: true}
			name := "fixed"
			if grown {
				o.Cap, name = variants.DefaultCap, "grown"
			}
			b.Run(fmt.Sprintf("%s-%d", name, n), func(b *testing.B) {
				for b.Loop() {
					if vs := variants.Generate(evs, n, o); len(vs) < variants.DefaultBudget {
						b.Fatalf("%d variants", len(vs))
					}
				}
			})
		}
	}
}

// bigKeys are each step's keys, as kavach diff learns them from the old
// build (COMMAND GETKEYS): the first argument.
func bigKeys(evs []kavach.Event) [][]string {
	var keys [][]string
	for _, s := range kavach.Steps(evs, redis.Integration{}) {
		c, _ := redis.ParseCommand(s.Request.Data)
		keys = append(keys, []string{string(c.Args[1])})
	}
	return keys
}

// BenchmarkGenerate1000StepsKeysUnknown is the same without the steps'
// keys: every earlier step may affect the failing one.
func BenchmarkGenerate1000StepsKeysUnknown(b *testing.B) {
	evs := bigIncident(1000)
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: bigLearned, Budget: 64, Seed: 1}
	for b.Loop() {
		variants.Generate(evs, 1000, o)
	}
}

// wideIncident is a session whose failing request (step 2) is one
// ZADD of n arguments (n/2 score-member pairs) after one SET: the
// request whose every candidate variant, built whole, made generation
// quadratic in its size.
func wideIncident(n int) []kavach.Event {
	var evs []kavach.Event
	add := func(dir kavach.Direction, data []byte) {
		evs = append(evs, kavach.Event{Seq: uint64(len(evs) + 1), Conn: 1, Dir: dir, Offset: time.Duration(len(evs)) * time.Millisecond, Data: data})
	}
	add(kavach.Open, nil)
	add(kavach.Request, redis.AppendCommand(nil, []byte("SET"), []byte("z"), []byte("v")))
	add(kavach.Response, []byte("+OK\r\n"))
	args := make([][]byte, 0, n+2)
	args = append(args, []byte("ZADD"), []byte("z"))
	for i := 0; len(args) < n+1; i++ {
		args = append(args, []byte(strconv.Itoa(i)), []byte("m"+strconv.Itoa(i)))
	}
	add(kavach.Request, redis.AppendCommand(nil, args...))
	add(kavach.Response, []byte("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"))
	return evs
}

func benchmarkGenerateWide(b *testing.B, n int) {
	evs := wideIncident(n)
	for _, grown := range []bool{false, true} {
		o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: bigLearned, Budget: 64, Seed: 1,
			Keys: [][]string{{"z"}, {"z"}}, Deferred: true}
		name := "fixed"
		if grown {
			o.Cap, name = variants.DefaultCap, "grown"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if vs := variants.Generate(evs, 2, o); len(vs) < 64 || !grown && len(vs) != 64 {
					b.Fatalf("%d variants, want 64 (fixed) or more (grown)", len(vs))
				}
			}
		})
	}
}

// BenchmarkGenerateWide2000 is generation for a failing request of 2,000
// arguments (the variants described, not built: Deferred, as kavach diff
// and kavach variants make them).
func BenchmarkGenerateWide2000(b *testing.B) { benchmarkGenerateWide(b, 2000) }

// BenchmarkGenerateWide500000 is the same with 500,000 arguments (a
// request of about 6 MB).
func BenchmarkGenerateWide500000(b *testing.B) { benchmarkGenerateWide(b, 500000) }
