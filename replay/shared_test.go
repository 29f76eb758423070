package replay

import (
	"sync"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
)

// The replays of a shared source, at once, get one plan per batching:
// made by the first to ask, the others wait for it and share it.
func TestSharedPlansOnce(t *testing.T) {
	var evs Slice
	for i := 0; i < 100; i++ {
		dir := kavach.Request
		if i%2 == 1 {
			dir = kavach.Response
		}
		evs = append(evs, kavach.Event{Seq: uint64(i + 1), Conn: 1, Dir: dir, Offset: time.Duration(i) * time.Millisecond, Data: []byte("x")})
	}
	src := Shared(evs)
	before := plansRead.Load()
	plans := make([]*plan, 8)
	var wg sync.WaitGroup
	for i := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := makePlan(src, nil, time.Time{}, i%2 == 0)
			if err != nil {
				t.Error(err)
			}
			plans[i] = p
		}()
	}
	wg.Wait()
	if got := plansRead.Load() - before; got != 2 {
		t.Errorf("8 replays read %d plans, want 2 (one with batches, one without)", got)
	}
	for i, p := range plans {
		if p != plans[i%2] || len(p.due) != 50 {
			t.Errorf("replay %d: plan %p of %d steps, want the shared %p of 50", i, p, len(p.due), plans[i%2])
		}
	}
	if _, err := makePlan(evs, nil, time.Time{}, true); err != nil || plansRead.Load()-before != 3 {
		t.Errorf("a source not shared: %v, %d plans", err, plansRead.Load()-before)
	}
}
