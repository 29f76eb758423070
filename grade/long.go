package grade

import (
	"fmt"
	"io"
	"slices"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/replay"
	"github.com/kavach-dev/kavach/variants"
)

// Defaults of the long-recording options (docs/diff.md, "Long
// recordings").
const (
	DefaultLongSteps = 50_000
	DefaultWindow    = 1_000
)

// recording is the fixture as Run reads it: the opened recording (its
// steps in memory, or streamed from its file when long) and the source
// its replays read.
type recording struct {
	*fixtures.Recording
	src replay.Source
}

// newRecording is how Run reads rec: a short one from memory, its steps
// grouped once as it was opened, graded as long when it has more than
// longSteps steps; a long one streamed from its file, its summary taken
// once.
func newRecording(rec *fixtures.Recording, longSteps int) (*recording, bool) {
	if !rec.Long() {
		return &recording{rec, replay.Slice(rec.Events())}, rec.Len() > longSteps
	}
	return &recording{rec, replay.File(rec.Path())}, true
}

// window is the steps from first to last (counting from 1) cut out of a
// long recording as a recording of their own, numbered from 1: what its
// variants replay. A connection opened before the window is opened where
// the window first uses it.
type window struct {
	first, last int
	events      []kavach.Event
	steps       []kavach.Step
	rec         *fixtures.Recording // its events, their steps grouped once
	// A dependency slice (sliceFor) also has, per step of it, the
	// fixture's step (orig) and its keys (nil: unknown), and what the
	// report says of it.
	orig  []int
	keys  [][]string
	slice *SliceEvidence
}

// cutWindow is the steps first to last of a long recording cut out as a
// recording of their own (see window).
func cutWindow(src replay.Source, codec kavach.Integration, first, last int) (*window, error) {
	w := &window{first: first, last: last}
	in := func(n int) bool { return n >= first && n <= last }
	// A connection opened in the window is opened where the recording
	// opened it, when the window uses it.
	openedIn := func(before int) bool { return before >= first-1 && before < last }
	if err := w.cut(src, codec, in, openedIn); err != nil {
		return nil, err
	}
	if len(w.steps) != last-first+1 {
		return nil, fmt.Errorf("grade: the window of steps %d to %d has %d steps", first, last, len(w.steps))
	}
	return w, nil
}

// cut reads the recording's events into w: the requests and replies of
// the steps in (counting from 1), each connection opened where the
// recording opened it when openedIn says so of the steps before its open
// (nil: never), else where w first uses it, and closed where the
// recording closed it. It stops reading past w.last once no connection
// it kept is open.
func (w *window) cut(src replay.Source, codec kavach.Integration, in, openedIn func(n int) bool) error {
	evs, err := src.Open()
	if err != nil {
		return err
	}
	defer evs.Close()
	g := kavach.NewStepGrouper(codec)
	opened := map[uint64]bool{}
	for {
		ev, err := evs.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		n, _ := g.Add(ev)
		keep := false
		switch ev.Dir {
		case kavach.Request, kavach.Response:
			keep = in(n)
		case kavach.Open:
			if openedIn != nil && openedIn(g.Steps()) {
				opened[ev.Conn] = true
				w.events = append(w.events, ev)
			}
			continue
		case kavach.Close:
			if opened[ev.Conn] {
				delete(opened, ev.Conn)
				w.events = append(w.events, ev)
				continue
			}
		}
		if !keep {
			if g.Steps() > w.last && len(opened) == 0 {
				break
			}
			continue
		}
		if !opened[ev.Conn] {
			opened[ev.Conn] = true
			w.events = append(w.events, kavach.Event{Seq: ev.Seq, Conn: ev.Conn, Dir: kavach.Open, Offset: ev.Offset})
		}
		w.events = append(w.events, ev)
	}
	w.rec = fixtures.NewRecording(&fixtures.Fixture{Events: w.events}, codec)
	w.steps = w.rec.Steps()
	return nil
}

// shift maps the window's step n to the fixture's.
func (w *window) shift(n int) int {
	switch {
	case n == 0:
		return 0
	case w.orig != nil && n <= len(w.orig):
		return w.orig[n-1]
	case w.orig != nil:
		return w.last + n - len(w.orig) // past the slice: none is named
	}
	return n + w.first - 1
}

// local maps the fixture's step n to the window's, if it is in it.
func (w *window) local(n int) (int, bool) {
	if w.orig != nil {
		i, ok := slices.BinarySearch(w.orig, n)
		return i + 1, ok
	}
	return n - w.first + 1, n >= w.first && n <= w.last
}

// variantsOn grades the variants of a long recording on its window: the
// variants are made from the window's steps only and replay only them,
// and every step number in their evidence is the fixture's.
func variantsOn(w *window, run func(*fixtures.Recording) VariantsEvidence, fx *fixtures.Fixture) VariantsEvidence {
	wfx := &fixtures.Fixture{Path: fx.Path, Header: fx.Header, Invariants: fx.Invariants, Redactions: fx.Redactions}
	if f := fx.Failure; f != nil {
		wf := *f
		wf.Step, _ = w.local(f.Step)
		wfx.Failure = &wf
	}
	// run names the variants' steps by the fixture's (Options.stepOf).
	ve := run(w.rec.WithRecords(wfx))
	for i := range ve.LeftWhole {
		ve.LeftWhole[i] = variants.MapSteps(ve.LeftWhole[i], w.shift)
	}
	if w.slice != nil {
		ve.Slice = w.slice
	} else {
		ve.Window = fmt.Sprintf("steps %d to %d", w.first, w.last)
	}
	return ve
}
