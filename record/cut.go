package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
)

// errNothingKept is a cut with no segment to read: none could be written.
var errNothingKept = errors.New("nothing kept: no segment of the stretch could be written")

// cutSpec is what a cut is made of.
type cutSpec struct {
	dir, name string     // the cuts directory, and the cut's name in it
	segs      []*segment // closed segments, oldest first
	from      time.Duration
	failure   *kavach.Failure // numbered from the recording's start
	header    fixtures.Header
	codec     kavach.Integration
	create    func(string) (cutFile, error)
}

// cutFile is the file a cut is written to: an *os.File (createFile); a
// test plants a full disk.
type cutFile interface {
	io.Writer
	Sync() error
	Close() error
}

// createFile creates (or truncates: a temporary name is Kavach's own) the
// file at path.
func createFile(path string) (cutFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// writeCut writes the traffic of c.segs from offset c.from on (or from
// the request of the failure's step, when that is earlier) as a fixture
// of its own, as a recording started at c.from would have written it:
// offsets from the cut's start, the connections open then opened at its
// start, replies to requests before it left out, steps and the failure
// numbered from its first request. It writes under a temporary name in
// c.dir and renames the file into place once it is whole and synced; it
// returns the cut's path.
func writeCut(c cutSpec) (string, error) {
	segs, from := cutFrom(c)
	if len(segs) == 0 {
		return "", fmt.Errorf("cut %s: %w", c.name, errNothingKept)
	}
	tmp := filepath.Join(c.dir, "."+c.name+".tmp")
	f, err := c.create(tmp)
	if err != nil {
		return "", fmt.Errorf("cut %s: %w", c.name, err)
	}
	abandon := func(err error) (string, error) {
		f.Close()
		os.Remove(tmp)
		return "", fmt.Errorf("cut %s: %w", c.name, err)
	}
	h := c.header
	h.Start = h.Start.Add(from)
	w, err := fixtures.NewWriter(f, tmp, h)
	if err != nil {
		return abandon(err)
	}
	t := trimmer{w: w, codec: c.codec, from: from, steps: segs[0].at.steps, open: map[uint64]int{}}
	for id, n := range segs[0].at.open {
		t.open[id] = n
	}
	if h.State == fixtures.StateFirstTouch {
		// The cut starts with a segment (cutFrom), which captured each key
		// at its first touch in it: every event is in.
		t.keys = map[string]bool{}
		t.begin()
	}
	for _, s := range segs {
		if err := t.segment(s.path); err != nil {
			w.Close(fixtures.End{})
			return abandon(err)
		}
	}
	t.begin() // a stretch with no event after its start still opens its connections
	if t.keys != nil {
		st := fixtures.State{Mode: fixtures.StateFirstTouch, Keys: len(t.keys), Bytes: t.keyBytes,
			Note: "cut: each key captured at its first touch in the cut"}
		if err := w.Write(fixtures.Record{Kind: fixtures.KindState, State: &st}); err != nil {
			w.Close(fixtures.End{})
			return abandon(err)
		}
	}
	if fl := c.failure; fl != nil && fl.Step > t.first {
		g := *fl
		g.Step -= t.first
		if err := w.Failure(g); err != nil {
			w.Close(fixtures.End{})
			return abandon(err)
		}
	}
	reason := "cut on demand"
	if c.failure != nil {
		reason = "cut at the failure: " + c.failure.Signature
	}
	if err := w.Close(fixtures.End{Duration: t.last, Reason: reason}); err != nil {
		return abandon(err)
	}
	if err := f.Sync(); err != nil {
		return abandon(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("cut %s: %w", c.name, err)
	}
	return placeCut(tmp, c.dir, c.name)
}

// cutFrom is the segments a cut reads and the offset it starts at: from
// c.from, unless the failure's step was written before it, when the cut
// starts with the segment that holds that step.
func cutFrom(c cutSpec) ([]*segment, time.Duration) {
	i := 0
	for j, s := range c.segs {
		if s.at.at <= c.from {
			i = j
		}
	}
	from := c.from
	if c.header.State == fixtures.StateFirstTouch {
		// The keys captured in the first segment before from would be
		// missing: a cut with state starts at a segment's start.
		from = -1
	}
	if fl := c.failure; fl != nil {
		for i > 0 && c.segs[i].at.steps >= fl.Step {
			i--
			from = c.segs[i].at.at
		}
	}
	if len(c.segs) > 0 {
		from = max(from, c.segs[i].at.at)
	}
	return c.segs[i:], from
}

// placeCut renames tmp to name in dir, or to name-1, name-2... when a
// cut of that name is there already (two cuts in one millisecond), and
// syncs the directory.
func placeCut(tmp, dir, name string) (string, error) {
	base := strings.TrimSuffix(name, fixtures.Ext)
	for i := 0; ; i++ {
		path := filepath.Join(dir, name)
		if i > 0 {
			path = filepath.Join(dir, fmt.Sprintf("%s-%d%s", base, i, fixtures.Ext))
		}
		// A hard link never replaces a file: the cut takes a name no one
		// has, then its temporary name goes.
		err := os.Link(tmp, path)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		os.Remove(tmp)
		if err != nil {
			return "", fmt.Errorf("cut %s: %w", name, err)
		}
		if d, err := os.Open(dir); err == nil {
			d.Sync()
			d.Close()
		}
		return path, nil
	}
}

// trimmer copies the events of a stretch into a cut, leaving out what
// came before its start and the replies to requests made before it.
type trimmer struct {
	w     *fixtures.Writer
	codec kavach.Integration
	from  time.Duration
	// open is, until the start, the connections open with the replies
	// they wait for; after it, the replies still to leave out.
	open    map[uint64]int
	steps   int  // requests before the start, once begun: the cut's step 0
	first   int  // steps when the cut began
	started bool // the start is passed: events are copied
	last    time.Duration
	// keys, with first-touch state, are the keys captured in the cut
	// ("DB:KEY"); a key captured again in a later segment is not
	// copied again. keyBytes sums their payloads.
	keys     map[string]bool
	keyBytes int64
}

// stateKey copies a key's capture when the cut has none of it yet.
func (t *trimmer) stateKey(ks kavach.KeyState) error {
	id := fmt.Sprintf("%d:%s", ks.DB, ks.Key)
	if t.keys == nil || !t.started || t.keys[id] {
		return nil
	}
	t.keys[id] = true
	t.keyBytes += int64(len(ks.Dump))
	ks.Key, ks.Dump = bytes.Clone(ks.Key), bytes.Clone(ks.Dump)
	return t.w.Write(fixtures.Record{Kind: fixtures.KindStateKey, StateKey: &ks})
}

// segment copies the records of one segment file.
func (t *trimmer) segment(path string) error {
	r, err := fixtures.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	seqs := map[uint64]uint64{} // the segment's numbers to the cut's
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch rec.Kind {
		case fixtures.KindEvent:
			ev := *rec.Event
			ev.Data = append([]byte(nil), ev.Data...)
			seq, err := t.event(ev)
			if err != nil {
				return err
			}
			if seq > 0 {
				seqs[ev.Seq] = seq
			}
		case fixtures.KindStateKey:
			if err := t.stateKey(*rec.StateKey); err != nil {
				return err
			}
		case fixtures.KindRedaction:
			if seq, ok := seqs[rec.Redaction.Seq]; ok {
				red := *rec.Redaction
				red.Seq = seq
				if err := t.w.Write(fixtures.Record{Kind: fixtures.KindRedaction, Redaction: &red}); err != nil {
					return err
				}
			}
		}
	}
}

// event copies ev when it is in the cut and returns its number there (0
// when left out).
func (t *trimmer) event(ev kavach.Event) (uint64, error) {
	if !t.started && ev.Offset >= t.from {
		t.begin()
	}
	reply := ev.Dir == kavach.Response && (ev.Flags&kavach.ParseError != 0 || !t.codec.IsPush(ev.Data))
	if !t.started {
		switch ev.Dir {
		case kavach.Open:
			t.open[ev.Conn] = 0
		case kavach.Close:
			delete(t.open, ev.Conn)
		case kavach.Request:
			t.steps++
			n := 1
			if ev.Flags&kavach.ParseError == 0 {
				n = t.codec.Replies(ev.Data)
			}
			t.open[ev.Conn] += n
		case kavach.Response:
			if reply && t.open[ev.Conn] > 0 {
				t.open[ev.Conn]--
			}
		}
		return 0, nil
	}
	switch {
	case reply && t.open[ev.Conn] > 0:
		t.open[ev.Conn]-- // answers a request before the cut
		return 0, nil
	case ev.Dir == kavach.Close:
		delete(t.open, ev.Conn)
	}
	ev.Offset = max(0, ev.Offset-t.from)
	t.last = max(t.last, ev.Offset)
	ev.Seq = 0
	return t.w.Event(ev)
}

// begin starts the cut: each connection open at its start is opened at
// offset zero, as it would have been to a recording started then.
func (t *trimmer) begin() {
	if t.started {
		return
	}
	t.started, t.first = true, t.steps
	for _, id := range sortedConns(t.open) {
		t.w.Event(kavach.Event{Conn: id, Dir: kavach.Open})
	}
}

// countWriter counts the bytes written to a segment's file, and once
// they pass limit (when not zero) wakes the keeper on full.
type countWriter struct {
	f     *os.File
	n     atomic.Int64
	limit int64
	full  chan<- struct{}
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.f.Write(b)
	if total := c.n.Add(int64(n)); c.limit > 0 && total >= c.limit {
		select {
		case c.full <- struct{}{}:
		default:
		}
	}
	return n, err
}
