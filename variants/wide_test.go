package variants_test

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/variants"
)

// allocated is what f allocates, in bytes (runtime.MemStats.TotalAlloc,
// all of it, not what is live at the end).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestGenerateWideMemory: the variants of a failing request of 2,000
// arguments are generated allocating under 100 MB in all: a candidate
// is described by the field and value it changes and built only when
// kept, and no candidate copies the whole request. Each candidate built
// whole took several gigabytes for it.
func TestGenerateWideMemory(t *testing.T) {
	evs := wideIncident(2000)
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: bigLearned, Budget: 64, Seed: 1,
		Keys: [][]string{{"z"}, {"z"}}, Deferred: true}
	var vs []variants.Variant
	n := allocated(func() { vs = variants.Generate(evs, 2, o) })
	if len(vs) != 64 {
		t.Fatalf("%d variants, want 64", len(vs))
	}
	if n > 100<<20 {
		t.Fatalf("generating allocated %d MB, want < 100 MB", n>>20)
	}
	// Built, each variant is the incident with its one change, and no
	// two are alike.
	seen := map[string]int{}
	kinds := map[string]int{}
	for _, v := range vs {
		events, _ := v.Build()
		var b strings.Builder
		fmt.Fprintf(&b, "%d|%d|", v.ShiftFrom, v.Shift)
		for _, ev := range events {
			fmt.Fprintf(&b, "%d|%d|%q|", ev.Conn, ev.Dir, ev.Data)
		}
		if k, dup := seen[b.String()]; dup {
			t.Errorf("variant %d (%s) is variant %d again", v.K, v.Description, k)
		}
		seen[b.String()] = v.K
		kinds[v.Kind]++
	}
	if kinds["field"] == 0 {
		t.Errorf("kinds %v: want field variants of the wide request", kinds)
	}
	t.Logf("%d MB allocated; kinds %v", n>>20, kinds)
}

// TestGenerateWideSameVariants: describing the failing request's
// candidates by what they change (as a wide request's are) finds the
// same duplicates as comparing their bytes, and builds the same
// requests: with every candidate kept, both ways give the same
// variants, in the same order, with the same events. The requests have
// equal neighbouring members (removing either is one variant), flags a
// grammar drop also removes, and values past the size where value
// rewrites leave their bytes to be made.
func TestGenerateWideSameVariants(t *testing.T) {
	long := strings.Repeat("m", 530) // 8 pairs: over the 4 KB past which value rewrites are left to be made
	cases := map[string]struct {
		args  []string
		kinds []string // kinds that must be there: the sources of duplicates
	}{
		"flags":         {[]string{"ZADD", "z", "XX", "CH", "1", "a", "2", "b"}, []string{"field", "removed", "grammar", "number-form"}},
		"equal members": {[]string{"SADD", "z", "a", "a", "a", "b", "b", "c"}, []string{"field", "removed"}},
		"long members":  {append([]string{"ZADD", "z"}, repeatPairs(long, 8)...), []string{"field", "removed", "grammar", "number-form"}},
	}
	for name, tc := range cases {
		args := tc.args
		t.Run(name, func(t *testing.T) {
			evs := wideIncident(2)
			b := make([][]byte, len(args))
			for i, a := range args {
				b[i] = []byte(a)
			}
			evs[3].Data = redis.AppendCommand(nil, b...) // the failing request
			o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: bigLearned, Budget: 100000, Seed: 1,
				Keys: [][]string{{"z"}, {"z"}}}
			exact := variants.Generate(evs, 2, o)
			restore := variants.SetExact(0, 0)
			wide := variants.Generate(evs, 2, o)
			restore()
			if len(exact) != len(wide) {
				t.Fatalf("%d variants by bytes, %d by what they change", len(exact), len(wide))
			}
			kinds := map[string]int{}
			for i := range exact {
				e, w := exact[i], wide[i]
				if e.Kind != w.Kind || e.Description != w.Description || fmt.Sprint(e.Events) != fmt.Sprint(w.Events) || fmt.Sprint(e.Origin) != fmt.Sprint(w.Origin) {
					t.Fatalf("variant %d: by bytes %s %q, by what it changes %s %q", i+1, e.Kind, e.Description, w.Kind, w.Description)
				}
				kinds[e.Kind]++
			}
			for _, k := range tc.kinds {
				if kinds[k] == 0 {
					t.Errorf("no %s variant among %v: the comparison misses a source of duplicates", k, kinds)
				}
			}
			t.Logf("%d variants alike, kinds %v", len(exact), kinds)
		})
	}
}

func repeatPairs(member string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, strconv.Itoa(i), member+strconv.Itoa(i))
	}
	return out
}
