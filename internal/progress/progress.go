// Package progress draws the progress of a long command on one line of
// a terminal: what it counts, how far it is and the time it has left. The
// line is the command's stderr, cleared before any message is written
// there; on a pipe or a file nothing is drawn.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/kavach-dev/kavach/grade"
)

// Line is a command's stderr. On a terminal it can draw one progress
// line, which it clears before anything else is written there, so that
// no message is ever glued onto it.
type Line struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool // draw progress: w is a terminal
	drawn bool
	now   func() time.Time
}

// New is the Line of w, which draws progress only when w is a terminal
// that wants it (not a pipe or a file, not TERM=dumb).
func New(w io.Writer) *Line {
	return &Line{w: w, tty: isTerminal(w), now: time.Now}
}

// Write writes b to the line's writer, clearing the progress line first.
func (p *Line) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	return p.w.Write(b)
}

func (p *Line) clearLocked() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func (p *Line) draw(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\033[K"+s)
	p.drawn = true
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
		now := p.now()
		if ph.Done >= ph.Total {
			began = now
			p.mu.Lock()
			p.clearLocked()
			p.mu.Unlock()
			return
		}
		p.draw(fmt.Sprintf("kavach: %s: %d of %d done%s", ph.Name, ph.Done, ph.Total,
			timeLeft(now.Sub(began), ph.Done, ph.Total-ph.Done)))
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
		if done >= total {
			p.mu.Lock()
			p.clearLocked()
			p.mu.Unlock()
			return
		}
		p.draw(fmt.Sprintf("kavach: fixtures: %d of %d graded%s", done, total,
			timeLeft(p.now().Sub(began), done, total-done)))
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
