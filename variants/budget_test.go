package variants_test

import (
	"fmt"
	"testing"

	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/variants"
)

// causeOf is the step a variant of the incident mutates, read from its
// description ("step 3 (writes ...)"), for the budget's rounds.
func causeOf(v variants.Variant) string {
	var n int
	if _, err := fmt.Sscanf(v.Description, "step %d", &n); err == nil {
		return fmt.Sprint(n)
	}
	return v.Description
}

// Every kind gets a variant before any gets a second, and every cause
// (the failing request, each writer of its key) a variant of each of
// its kinds before the rest of the budget is shared: with a budget no
// larger than the kinds, each variant is of another kind, and with a
// budget of the first rounds every writer has each of its kinds.
func TestEveryKindBeforeAnyTwice(t *testing.T) {
	evs, keys := session(
		[]string{"XADD", "events", "5000000000-1", "name", "a"}, // 1: writes events
		[]string{"SET", "other", "x"},                           // 2: another key
		[]string{"XADD", "events", "5000000001-1", "name", "b"}, // 3: writes events
		[]string{"XRANGE", "events", "-", "+"},                  // 4: fails
	)
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: writersSchema, Budget: 1000, Seed: 1, Keys: keys}
	all, applicable := variants.Counted(evs, 4, o)
	slots := map[string]bool{}
	for _, v := range all {
		if v.Place == variants.PlaceWriter {
			slots[v.Kind+" at step "+causeOf(v)] = true
		}
	}
	if len(applicable) < 6 || len(slots) < 4 {
		t.Fatalf("applicable %v, writer slots %v: want a recording with many kinds and two writers", applicable, slots)
	}
	for seed := uint64(1); seed <= 5; seed++ {
		o.Seed, o.Budget = seed, len(applicable)
		small := variants.Generate(evs, 4, o)
		kinds := map[string]int{}
		for _, v := range small {
			kinds[v.Kind]++
		}
		if len(small) != len(applicable) || len(kinds) != len(applicable) {
			t.Errorf("seed %d, budget %d: kinds %v, want one variant of each of %v", seed, o.Budget, kinds, applicable)
		}
		o.Budget = len(applicable) + len(slots)
		got := map[string]bool{}
		for _, v := range variants.Generate(evs, 4, o) {
			if v.Place == variants.PlaceWriter {
				got[v.Kind+" at step "+causeOf(v)] = true
			}
		}
		for s := range slots {
			if !got[s] {
				t.Errorf("seed %d, budget %d: no %s; want every writer's every kind (%v)", seed, o.Budget, s, slots)
			}
		}
	}
}

// The default budget grows with what is applicable: the floor and one
// more per slot of the first rounds, at most the cap; a budget asked for
// is kept exactly.
func TestBudgetGrowsWithApplicable(t *testing.T) {
	cmds := [][]string{}
	for i := range 12 {
		cmds = append(cmds, []string{"XADD", "events", fmt.Sprintf("50000000%02d-1", i), "name", "a"})
	}
	cmds = append(cmds, []string{"XRANGE", "events", "-", "+"})
	evs, keys := session(cmds...)
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: writersSchema, Budget: 8, Seed: 1, Keys: keys}
	if n := len(variants.Generate(evs, 13, o)); n != 8 {
		t.Errorf("budget 8, no cap: %d variants, want 8", n)
	}
	o.Budget, o.Cap = variants.DefaultBudget, variants.CapFor(variants.DefaultBudget)
	grown := variants.Generate(evs, 13, o)
	if len(grown) <= variants.DefaultBudget || len(grown) > variants.DefaultCap {
		t.Errorf("default budget on 12 writers: %d variants, want more than %d (the floor), at most %d", len(grown), variants.DefaultBudget, variants.DefaultCap)
	}
	if variants.CapFor(65) != 0 {
		t.Errorf("a budget asked for (65) grows")
	}
	// A short recording has fewer candidates than the floor: all made.
	evs, keys = session([]string{"SET", "k", "v"}, []string{"GET", "k"})
	o.Keys = keys
	o.Budget, o.Cap = 1000, 0
	all := len(variants.Generate(evs, 2, o))
	o.Budget, o.Cap = variants.DefaultBudget, variants.DefaultCap
	if n := len(variants.Generate(evs, 2, o)); all > variants.DefaultBudget || n != all {
		t.Errorf("two steps: %d variants of %d, want all of them (fewer than the floor %d)", n, all, variants.DefaultBudget)
	}
}
