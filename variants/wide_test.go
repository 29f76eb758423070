package variants_test

import (
	"fmt"
	"runtime"
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
	o := variants.Options{Codec: redis.Codec{}, Variator: redis.Codec{}, Schema: bigLearned, Budget: 64, Seed: 1,
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
