package replay

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
)

// Source is a recording's events, read from the start each time it is
// opened: a replay reads it twice, once to plan (when each step's replies
// were recorded) and once to play, and keeps only a window of it.
type Source interface {
	Open() (Events, error)
}

// Events reads a source's events in order.
type Events interface {
	// Next is the next event, or io.EOF after the last. Its Data stays
	// valid after later calls.
	Next() (kavach.Event, error)
	Close() error
}

// Slice is a Source of events held in memory.
type Slice []kavach.Event

// Open reads the slice from its start.
func (s Slice) Open() (Events, error) { return &sliceEvents{s: s}, nil }

type sliceEvents struct {
	s []kavach.Event
	i int
}

func (e *sliceEvents) Next() (kavach.Event, error) {
	if e.i >= len(e.s) {
		return kavach.Event{}, io.EOF
	}
	e.i++
	return e.s[e.i-1], nil
}

func (e *sliceEvents) Close() error { return nil }

// File is a Source that reads a fixture file a block at a time, the
// events never all in memory.
type File string

// Open opens the fixture. A fixture cut short (the recording did not end
// cleanly) gives the events of its whole blocks, as fixtures.Load does.
func (f File) Open() (Events, error) {
	r, err := fixtures.Open(string(f))
	if err != nil {
		return nil, err
	}
	return &fileEvents{r: r}, nil
}

type fileEvents struct{ r *fixtures.Reader }

func (e *fileEvents) Next() (kavach.Event, error) {
	for {
		rec, err := e.r.Next()
		if err != nil {
			if err != io.EOF {
				err = fmt.Errorf("replay: %w", err)
			}
			return kavach.Event{}, err
		}
		if rec.Kind == fixtures.KindEvent {
			return *rec.Event, nil // not borrowed: Data is its own
		}
	}
}

func (e *fileEvents) Close() error { return e.r.Close() }

// plan is what a replay needs to know of the whole recording before it
// plays it, read in one pass and kept small: per step, when its last
// reply was recorded; per event, whether it is part of a pipelined batch.
type plan struct {
	due []time.Duration // per step: recorded offset of its last reply, or of the request
	// reads are the steps whose recorded reply shows what the build's
	// clock read (kavach.Abilities.ClockReads), with that reading as an
	// offset: the replay's clock is there when the step is sent.
	reads   map[int]time.Duration
	batched []uint64 // per event, a bit: see makePlan
	events  int
}

func (p *plan) isBatched(i int) bool { return p.batched[i/64]&(1<<(i%64)) != 0 }

func (p *plan) setBatched(i int) { p.batched[i/64] |= 1 << (i % 64) }

// makePlan reads src once. With batch false no event is batched (a clock
// variant's replay has none: its shift would move the clock inside one).
//
// Batches are runs of one connection's events within one virtual
// millisecond, with no other connection's event among them: the build
// reads a connection's requests in order and the clock does not move, so
// sending them together (pipelined) gives the answers that round trips
// would. A request inside such a run is sent without waiting for the
// replies before it, and those replies are not waited for where they were
// recorded; they are waited for at the end of the run. (A request after a
// blocking command waits in the build's input, as it would have waited
// in the client.) This is what lets a replay keep up with a client that
// talks to the service directly (bench/replay.sh).
func makePlan(src Source, codec kavach.Integration, start time.Time, batch bool) (*plan, error) {
	if sh, ok := src.(*shared); ok {
		return sh.plan(codec, start, batch)
	}
	return readPlan(src, codec, start, batch)
}

// Shared is src with its plans made once and shared by every replay of
// it that asks for the same one (the same start and batching): a diff's
// four replays of one recording read it once to plan, not four times. A
// plan is read only, once made. Every replay of a shared source must use
// one codec (Options.Integration): the first one's plan is everyone's.
func Shared(src Source) Source { return &shared{Source: src} }

type shared struct {
	Source
	mu    sync.Mutex
	plans []sharedPlan
}

type sharedPlan struct {
	start time.Time
	batch bool
	once  *sync.Once
	p     *plan
	err   error
}

func (s *shared) plan(codec kavach.Integration, start time.Time, batch bool) (*plan, error) {
	s.mu.Lock()
	i := -1
	for j, sp := range s.plans {
		if sp.start.Equal(start) && sp.batch == batch {
			i = j
		}
	}
	if i < 0 {
		s.plans = append(s.plans, sharedPlan{start: start, batch: batch, once: new(sync.Once)})
		i = len(s.plans) - 1
	}
	once := s.plans[i].once
	s.mu.Unlock()
	once.Do(func() {
		p, err := readPlan(s.Source, codec, start, batch)
		s.mu.Lock()
		s.plans[i].p, s.plans[i].err = p, err
		s.mu.Unlock()
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.plans[i].p, s.plans[i].err
}

// Counts are how many plans the replays of this process have read, and
// how many times spills have been read back (Spill.Steps): for tests
// that prove work is not repeated, and benchmarks.
func Counts() (plans, spills int64) { return plansRead.Load(), spillReads.Load() }

var plansRead, spillReads atomic.Int64

func readPlan(src Source, codec kavach.Integration, start time.Time, batch bool) (*plan, error) {
	plansRead.Add(1)
	evs, err := src.Open()
	if err != nil {
		return nil, err
	}
	defer evs.Close()
	p := &plan{}
	g := kavach.NewStepGrouper(codec)
	var clockReads func([]byte) func([]byte) (time.Time, bool)
	if codec != nil {
		clockReads = codec.Abilities().ClockReads
	}
	type reading struct {
		at   time.Duration // the request's offset
		read func([]byte) (time.Time, bool)
	}
	readers := map[int]reading{} // steps asked, their reply not in yet
	ms := func(ev kavach.Event) time.Time { return start.Add(ev.Offset).Truncate(time.Millisecond) }
	// The batch rule, one event at a time: start is the
	// first request of the current run, runResp the responses inside it
	// not yet known to be followed by a request of the run.
	var (
		startEv  kavach.Event
		startAt  = -1
		runResps []int
	)
	for i := 0; ; i++ {
		ev, err := evs.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		p.events++
		if i/64 >= len(p.batched) {
			p.batched = append(p.batched, 0)
		}
		n, _ := g.Add(ev)
		switch {
		case ev.Dir == kavach.Request:
			if clockReads != nil && ev.Flags&kavach.ParseError == 0 {
				if f := clockReads(ev.Data); f != nil {
					readers[len(p.due)] = reading{ev.Offset, f}
				}
			}
			p.due = append(p.due, ev.Offset)
		case ev.Dir == kavach.Response && n > 0 && n <= len(p.due):
			p.due[n-1] = ev.Offset
			if rd, ok := readers[n-1]; ok {
				delete(readers, n-1)
				p.read(n-1, rd.at, ev, rd.read, start)
			}
		}
		if !batch {
			continue
		}
		switch {
		case ev.Dir == kavach.Request && ev.Flags&kavach.ParseError == 0 && startAt >= 0 &&
			ev.Conn == startEv.Conn && ms(ev).Equal(ms(startEv)):
			p.setBatched(i)
			for _, j := range runResps {
				p.setBatched(j)
			}
			runResps = runResps[:0]
		case ev.Dir == kavach.Request && ev.Flags&kavach.ParseError == 0:
			startAt, startEv = i, ev
			runResps = runResps[:0]
		case ev.Dir == kavach.Response && startAt >= 0 && ev.Conn == startEv.Conn && ms(ev).Equal(ms(startEv)):
			// part of the run if a request of it follows
			runResps = append(runResps, i)
		default:
			startAt = -1
			runResps = runResps[:0]
		}
	}
	return p, nil
}

// read notes step i's clock reading, if its reply (ev) shows one later
// than the proxy stamped the request (at) and no later than it stamped
// the reply (with a millisecond to spare, for a clock read to the
// millisecond). A reading after the reply is not the clock (Redis's XADD
// * answers the stream's last id plus one when that is ahead of its
// clock); one before the request needs no move.
func (p *plan) read(i int, at time.Duration, ev kavach.Event, read func([]byte) (time.Time, bool), start time.Time) {
	t, ok := read(ev.Data)
	if !ok {
		return
	}
	off := t.Sub(start)
	if off <= at || off > ev.Offset+time.Millisecond {
		return
	}
	if p.reads == nil {
		p.reads = map[int]time.Duration{}
	}
	p.reads[i] = off
}

// oweCounter is the incremental form of owed: for each request and each
// close by the client, how many steps of its connection the recording had
// seen answered before it; for each reply, how many with it. It also
// numbers each connection's pushes (replies no request asked for,
// codec.IsPush: pub/sub messages, invalidations).
type oweCounter struct {
	codec   kavach.Integration
	pending map[uint64][]int // conn -> replies each waiting step still lacks
	done    map[uint64]int
	pushes  map[uint64]int // conn -> pushes recorded on it so far
}

func newOweCounter(codec kavach.Integration) *oweCounter {
	return &oweCounter{codec: codec, pending: map[uint64][]int{}, done: map[uint64]int{}, pushes: map[uint64]int{}}
}

// add counts ev: owed as above, and push, n for the nth push on ev's
// connection (0 for any other event).
func (o *oweCounter) add(ev kavach.Event) (owed, push int) {
	codec := o.codec
	switch ev.Dir {
	case kavach.Request:
		out := o.done[ev.Conn]
		n := 1
		if codec != nil && ev.Flags&kavach.ParseError == 0 {
			n = codec.Replies(ev.Data)
		}
		switch {
		case n > 0 && ev.Flags&(kavach.Inserted|kavach.Foreign) != 0:
			// No reply of it was recorded: its client waits for it
			// before the connection's next event.
			o.done[ev.Conn]++
		case n > 0:
			o.pending[ev.Conn] = append(o.pending[ev.Conn], n)
		}
		return out, 0
	case kavach.Response:
		if codec != nil && ev.Flags&kavach.ParseError == 0 && codec.IsPush(ev.Data) {
			o.pushes[ev.Conn]++
			return o.done[ev.Conn], o.pushes[ev.Conn]
		}
		if q := o.pending[ev.Conn]; len(q) > 0 {
			if q[0]--; q[0] == 0 {
				o.pending[ev.Conn] = q[1:]
				o.done[ev.Conn]++
			}
		}
		return o.done[ev.Conn], 0
	case kavach.Close:
		out := o.done[ev.Conn]
		delete(o.pending, ev.Conn)
		return out, 0
	}
	return 0, 0
}
