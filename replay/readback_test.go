package replay_test

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/internal/integrationtest"
	"github.com/kavach-dev/kavach/replay"
)

// echoNormalize normalizes a reply as the request it answers and the
// reply, so that a result read back beside the wrong step shows.
type echoNormalize struct{ integrationtest.Base }

func (echoNormalize) Normalize(request, response []byte) any {
	return string(request) + "=" + string(response)
}

// spillOf is a spill of n steps whose replies name the run and the step.
func spillOf(t *testing.T, run, n int) *replay.Spill {
	t.Helper()
	sp, err := replay.NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	for i := 1; i <= n; i++ {
		if err := sp.Step(replay.StepResult{N: i, Responses: [][]byte{[]byte(fmt.Sprintf("run%d-step%d", run, i))}}); err != nil {
			t.Fatal(err)
		}
	}
	return sp
}

// streamed gives n steps as a streamed recording does: one buffer,
// overwritten from one step to the next, valid during the call only.
func streamed(n int, fail error) func(func(kavach.Step) error) error {
	return func(fn func(kavach.Step) error) error {
		buf := make([]byte, 0, 32)
		for i := 1; i <= n; i++ {
			buf = strconv.AppendInt(append(buf[:0], "req"...), int64(i), 10)
			if err := fn(kavach.Step{N: i, Request: kavach.Event{Dir: kavach.Request, Data: buf}}); err != nil {
				return err
			}
		}
		return fail
	}
}

func runName(i int) string { return "run " + strconv.Itoa(i+1) }

// TestReadBackInOrder: over several batches and three spills, each step
// comes to fn once, in order, beside each spill's result for it,
// normalized with its own request; and a step fn keeps is a copy, not the
// stream's buffer.
func TestReadBackInOrder(t *testing.T) {
	const n = 1300 // two whole batches and part of a third
	spills := []*replay.Spill{spillOf(t, 1, n), spillOf(t, 2, n), spillOf(t, 3, n)}
	var kept []kavach.Step
	next := 1
	err := replay.ReadBack(streamed(n, nil), spills, echoNormalize{}, runName, func(st kavach.Step, got []replay.StepResult) error {
		if st.N != next {
			t.Fatalf("step %d came after %d", st.N, next-1)
		}
		next++
		for i, g := range got {
			want := fmt.Sprintf("req%d=run%d-step%d", st.N, i+1, st.N)
			if g.N != st.N || len(g.Output) != 1 || g.Output[0] != want || string(g.Request) != "req"+strconv.Itoa(st.N) {
				t.Fatalf("step %d, spill %d: %+v, want output %q", st.N, i, g, want)
			}
		}
		kept = append(kept, st)
		return nil
	})
	if err != nil || next != n+1 {
		t.Fatalf("ReadBack: %v after %d steps", err, next-1)
	}
	for _, st := range kept {
		if string(st.Request.Data) != "req"+strconv.Itoa(st.N) {
			t.Fatalf("a kept step %d holds %q: the stream's buffer, not a copy", st.N, st.Request.Data)
		}
	}
}

// TestReadBackErrors: the error is the one a read in step order meets
// first, naming the spill and the step; fn has had every step before it.
// A recording's own error comes after fn has had the steps read before it;
// fn's error ends the read.
func TestReadBackErrors(t *testing.T) {
	// Spill 2 ends at step 700, spill 3 at 600: step 601 is the first
	// a read in order cannot give, and it is spill 3's.
	spills := []*replay.Spill{spillOf(t, 1, 1000), spillOf(t, 2, 700), spillOf(t, 3, 600)}
	seen := 0
	err := replay.ReadBack(streamed(1000, nil), spills, echoNormalize{}, runName, func(st kavach.Step, got []replay.StepResult) error {
		seen = st.N
		return nil
	})
	if err == nil || err.Error() != "run 3, step 601: EOF" || seen != 600 {
		t.Errorf("a short spill: %v after step %d, want run 3, step 601: EOF after 600", err, seen)
	}

	broken := errors.New("the recording's block 3 is damaged")
	seen = 0
	err = replay.ReadBack(streamed(700, broken), []*replay.Spill{spillOf(t, 1, 1000)}, echoNormalize{}, runName, func(st kavach.Step, got []replay.StepResult) error {
		seen = st.N
		return nil
	})
	if !errors.Is(err, broken) || seen != 700 {
		t.Errorf("the recording's error: %v after step %d, want it after 700", err, seen)
	}

	stop := errors.New("enough")
	seen = 0
	err = replay.ReadBack(streamed(1000, nil), []*replay.Spill{spillOf(t, 1, 1000)}, echoNormalize{}, runName, func(st kavach.Step, got []replay.StepResult) error {
		if seen = st.N; st.N == 520 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || seen != 520 {
		t.Errorf("fn's error: %v after step %d, want it at 520", err, seen)
	}
}

// BenchmarkReadBack reads four spills of a long recording back (as a diff
// does: three old replays and the new one) with ReadBack, and one spill
// after another in one goroutine, as ReadBack did before it read them
// side by side: "sequential". It prints the ratio.
func BenchmarkReadBack(b *testing.B) {
	const n, runs = 100000, 4
	spills := make([]*replay.Spill, runs)
	for r := range spills {
		sp, err := replay.NewSpill(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer sp.Close()
		for i := 1; i <= n; i++ {
			sp.Step(replay.StepResult{N: i, Responses: [][]byte{[]byte("$5\r\nvalue\r\n")}})
		}
		spills[r] = sp
	}
	in := echoNormalize{}
	var per [2]time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := replay.ReadBack(streamed(n, nil), spills, in, runName, func(kavach.Step, []replay.StepResult) error { return nil }); err != nil {
			b.Fatal(err)
		}
		per[0] += time.Since(start)
		start = time.Now()
		readers := make([]*replay.SpillReader, runs)
		for r, sp := range spills {
			readers[r], _ = sp.Steps()
		}
		err := streamed(n, nil)(func(st kavach.Step) error {
			for _, rd := range readers {
				if _, err := rd.Next(st.Request.Data, in); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		per[1] += time.Since(start)
	}
	b.ReportMetric(float64(per[0].Nanoseconds())/float64(b.N*n), "ns/step")
	b.ReportMetric(float64(per[1].Nanoseconds())/float64(b.N*n), "sequential-ns/step")
	b.ReportMetric(float64(per[1])/float64(per[0]), "speedup")
}

// TestReadBackLargeSteps: steps whose recorded replies are large are read
// back in smaller batches (a megabyte of them, not 512 steps), still each
// once, in order, beside each spill's result for it.
func TestReadBackLargeSteps(t *testing.T) {
	const n = 100 // 64 KB each: batches of 16
	reply := make([]byte, 64<<10)
	steps := func(fn func(kavach.Step) error) error {
		for i := 1; i <= n; i++ {
			st := kavach.Step{N: i, Request: kavach.Event{Dir: kavach.Request, Data: []byte("req" + strconv.Itoa(i))},
				Responses: []kavach.Event{{Dir: kavach.Response, Data: reply}}}
			if err := fn(st); err != nil {
				return err
			}
		}
		return nil
	}
	spills := []*replay.Spill{spillOf(t, 1, n), spillOf(t, 2, n)}
	next := 1
	err := replay.ReadBack(steps, spills, echoNormalize{}, runName, func(st kavach.Step, got []replay.StepResult) error {
		if st.N != next || len(st.Responses) != 1 || len(st.Responses[0].Data) != len(reply) {
			t.Fatalf("step %d (%d replies) came after %d", st.N, len(st.Responses), next-1)
		}
		next++
		for i, g := range got {
			if want := fmt.Sprintf("req%d=run%d-step%d", st.N, i+1, st.N); g.N != st.N || g.Output[0] != want {
				t.Fatalf("step %d, spill %d: %v, want %q", st.N, i, g.Output, want)
			}
		}
		return nil
	})
	if err != nil || next != n+1 {
		t.Fatalf("ReadBack: %v after %d steps", err, next-1)
	}
}
