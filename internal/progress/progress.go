// Package progress draws the progress of a long command on a terminal:
// what it counts, how far it is and the time it has left, one line drawn
// by mpb (github.com/vbauerster/mpb/v8) on the command's stderr. Messages
// written to stderr while the line is drawn go above it; on a pipe or a
// file nothing is drawn and messages pass through as they are.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/kavach-dev/kavach/grade"
)

// Line is a command's stderr. On a terminal it can draw one progress
// line; anything else written there goes above it. Close ends the drawing
// before the command's last words.
type Line struct {
	mu   sync.Mutex
	w    io.Writer
	tty  bool // draw progress: w is a terminal
	now  func() time.Time
	opts []mpb.ContainerOption // the container's, beside its output (tests)
	p    *mpb.Progress         // while something was drawn, until Close
	bar  *mpb.Bar              // the line drawn now; nil between phases
	key  string                // what bar counts: its name and total
}

// New is the Line of w, which draws progress only when w is a terminal
// that wants it (not a pipe or a file, not TERM=dumb).
func New(w io.Writer) *Line {
	return &Line{w: w, tty: isTerminal(w), now: time.Now}
}

// Write writes b to the line's writer: above the progress line while one
// is drawn, as it is otherwise.
func (p *Line) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p != nil {
		return p.p.Write(b)
	}
	return p.w.Write(b)
}

// Close stops drawing: a line still drawn is removed, and what was
// written above it is out, before Close returns. Later writes go to the
// writer as they are.
func (p *Line) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p == nil {
		return
	}
	if p.bar != nil {
		p.bar.Abort(true)
		p.bar = nil
	}
	p.p.Wait()
	p.p = nil
}

// show draws name's line at done of total, counted with verb ("done",
// "graded"), the time left estimated from began; a line of another name
// or total replaces the one drawn. At done ≥ total the line is removed.
func (p *Line) show(name, verb string, done, total int, began time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := fmt.Sprintf("%s/%d", name, total)
	if p.bar != nil && p.key != key {
		p.bar.Abort(true)
		p.bar = nil
	}
	if done >= total {
		if p.bar != nil {
			p.bar.SetCurrent(int64(total)) // complete: removed
			p.bar = nil
		}
		return
	}
	if p.p == nil {
		p.p = mpb.New(append([]mpb.ContainerOption{mpb.WithOutput(p.w)}, p.opts...)...)
	}
	if p.bar == nil {
		text := func(s decor.Statistics) string {
			return fmt.Sprintf("kavach: %s: %d of %d %s%s", name, s.Current, s.Total, verb,
				timeLeft(p.now().Sub(began), int(s.Current), int(s.Total-s.Current)))
		}
		p.bar = p.p.New(int64(total), mpb.NopStyle(), mpb.BarRemoveOnComplete(),
			mpb.PrependDecorators(decor.Any(text)))
		p.key = key
	}
	p.bar.SetCurrent(int64(done))
}

// GradeProgress returns grade.Options.Progress for a diff drawn on this
// line, or nil when stderr is not a terminal. The line names what it
// counts and estimates the time the phase has left:
//
//	kavach: variants: 12 of 64 done, about 40s left
func (p *Line) GradeProgress() func(done, total int) {
	if !p.tty {
		return nil
	}
	var (
		mu     sync.Mutex
		phases grade.Phases
		began  = p.now() // when the phase began: the previous one's end
	)
	return func(_, total int) {
		mu.Lock()
		defer mu.Unlock()
		ph := phases.Next(total)
		p.show(ph.Name, "done", ph.Done, ph.Total, began)
		if ph.Done >= ph.Total {
			began = p.now()
		}
	}
}

// SuiteProgress is GradeProgress for a suite, whose fixtures are graded
// at once: it counts the fixtures graded.
//
//	kavach: fixtures: 1 of 3 graded, about 40s left
func (p *Line) SuiteProgress() func(done, total int) {
	if !p.tty {
		return nil
	}
	began := p.now()
	return func(done, total int) {
		p.show("fixtures", "graded", done, total, began)
	}
}

// timeLeft estimates the time n more items take, when took was spent on
// done items; "" until there is something to go on.
func timeLeft(took time.Duration, done, n int) string {
	if done <= 0 || n <= 0 {
		return ""
	}
	left := took / time.Duration(done) * time.Duration(n)
	if left < time.Second {
		return ", under a second left"
	}
	return fmt.Sprintf(", about %s left", left.Round(time.Second))
}

// isTerminal reports whether w is a terminal that wants progress drawn:
// never a pipe or file, and not with TERM=dumb.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
