package kavach

// Steps groups a recording's events into steps. Every Request event starts
// a step, numbered from 1 in the global order. A Response event belongs to
// the oldest request on its connection still waiting for replies (a
// request waits for codec.Replies of them); a push (codec.IsPush), or a
// response with no request waiting, is attached to the latest step on its
// connection. A Close event by the server marks the steps still waiting
// on that connection as Closed. A nil codec means one reply per request and no
// pushes. A StepGrouper does the same one event at a time.
func Steps(events []Event, codec Integration) []Step {
	var steps []Step
	g := NewStepGrouper(codec)
	for _, ev := range events {
		n, closed := g.Add(ev)
		switch {
		case ev.Dir == Request:
			steps = append(steps, Step{N: n, Request: ev})
		case ev.Dir == Response && n > 0:
			steps[n-1].Responses = append(steps[n-1].Responses, ev)
		}
		for _, c := range closed {
			steps[c-1].Closed = true
		}
	}
	return steps
}

// StepGrouper groups events into steps as Steps does, one event at a time,
// for a recording read as a stream: it keeps only, per connection, the
// steps still waiting for replies and the latest step, never the events.
type StepGrouper struct {
	codec   Integration
	n       int
	pending map[uint64][]stepWait
	last    map[uint64]int // conn -> its latest step
}

type stepWait struct{ step, left int }

// NewStepGrouper returns a grouper for the protocol of codec (nil: one
// reply per request, no pushes).
func NewStepGrouper(codec Integration) *StepGrouper {
	return &StepGrouper{codec: codec, pending: map[uint64][]stepWait{}, last: map[uint64]int{}}
}

// Steps is how many steps the events added so far started.
func (g *StepGrouper) Steps() int { return g.n }

// Add takes the next event and says where it goes: for a Request, the
// step it starts; for a Response, the step it belongs to (0: none, no step
// on its connection yet); for a Close by the server, closed lists the
// steps it marks Closed. The numbers count from 1.
func (g *StepGrouper) Add(ev Event) (step int, closed []int) {
	switch ev.Dir {
	case Request:
		n := 1
		if g.codec != nil && ev.Flags&ParseError == 0 {
			n = g.codec.Replies(ev.Data)
		}
		g.n++
		g.last[ev.Conn] = g.n
		if n > 0 && ev.Flags&(Inserted|Foreign) == 0 {
			g.pending[ev.Conn] = append(g.pending[ev.Conn], stepWait{g.n, n})
		}
		return g.n, nil
	case Response:
		q := g.pending[ev.Conn]
		push := g.codec != nil && ev.Flags&ParseError == 0 && g.codec.IsPush(ev.Data)
		if push || len(q) == 0 {
			return g.last[ev.Conn], nil
		}
		step = q[0].step
		if q[0].left--; q[0].left == 0 {
			q = q[1:]
		}
		if len(q) == 0 {
			delete(g.pending, ev.Conn)
		} else {
			g.pending[ev.Conn] = q
		}
		return step, nil
	case Close:
		if string(ev.Data) == "server" {
			for _, w := range g.pending[ev.Conn] {
				closed = append(closed, w.step)
			}
		}
		delete(g.pending, ev.Conn)
	}
	return 0, closed
}
