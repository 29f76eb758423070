package grade

// Phases turns the calls of Options.Progress (done of total, once per
// replay of a batch: the fixture's replays, then the variants) into
// phases with names and a count that only grows. Callers serialize calls.
type Phases struct {
	n, base, end int
	phase        string
}

// Phase is where a diff is, as Phases tells it.
type Phase struct {
	Name               string
	Done, Total        int // within the phase
	Overall, OverallOf int // across phases so far
}

// Next is Phases told of one more replay done in a batch of total.
func (p *Phases) Next(total int) Phase {
	if p.n >= p.end { // the previous phase is over: a new one starts
		p.phase = "replays of the fixture"
		if p.end > 0 {
			p.phase = "variants"
		}
		p.base, p.end = p.n, p.n+total
	}
	p.n++
	return Phase{Name: p.phase, Done: p.n - p.base, Total: p.end - p.base, Overall: p.n, OverallOf: p.end}
}
