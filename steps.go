package kavach

// Steps groups a recording's events into steps. Every Request event starts
// a step, numbered from 1 in the global order. A Response event belongs to
// the oldest request on its connection still waiting for replies (a
// request waits for codec.Replies of them); a push (codec.IsPush), or a
// response with no request waiting, is attached to the latest step on its
// connection. A Close event by the server marks the steps still waiting
// on that connection as Closed. A nil codec means one reply per request and no
// pushes.
func Steps(events []Event, codec Codec) []Step {
	type waiting struct{ step, left int }
	var (
		steps   []Step
		pending = map[uint64][]waiting{}
		last    = map[uint64]int{} // conn -> index into steps of its latest step
	)
	for _, ev := range events {
		switch ev.Dir {
		case Request:
			n := 1
			if codec != nil && ev.Flags&ParseError == 0 {
				n = codec.Replies(ev.Data)
			}
			steps = append(steps, Step{N: len(steps) + 1, Request: ev})
			last[ev.Conn] = len(steps) - 1
			if n > 0 && ev.Flags&Inserted == 0 {
				pending[ev.Conn] = append(pending[ev.Conn], waiting{len(steps) - 1, n})
			}
		case Response:
			q := pending[ev.Conn]
			push := codec != nil && ev.Flags&ParseError == 0 && codec.IsPush(ev.Data)
			if push || len(q) == 0 {
				if i, ok := last[ev.Conn]; ok {
					steps[i].Responses = append(steps[i].Responses, ev)
				}
				continue
			}
			steps[q[0].step].Responses = append(steps[q[0].step].Responses, ev)
			if q[0].left--; q[0].left == 0 {
				q = q[1:]
			}
			pending[ev.Conn] = q
		case Close:
			if string(ev.Data) == "server" {
				for _, w := range pending[ev.Conn] {
					steps[w.step].Closed = true
				}
			}
			delete(pending, ev.Conn)
		}
	}
	return steps
}
