package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kavach-dev/kavach/grade"
)

// progressLine is the command's stderr. On a terminal it can draw one
// progress line, which it clears before anything else is written there,
// so that no message is ever glued onto it.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool // draw progress: w is a terminal
	drawn bool
	now   func() time.Time
}

func newProgressLine(w io.Writer) *progressLine {
	return &progressLine{w: w, tty: isTerminal(w), now: time.Now}
}

func (p *progressLine) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	return p.w.Write(b)
}

func (p *progressLine) clearLocked() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func (p *progressLine) draw(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\033[K"+s)
	p.drawn = true
}

// gradeProgress returns grade.Options.Progress for a diff drawn on this
// line, or nil when stderr is not a terminal. The line names what it
// counts and estimates the time the phase has left:
//
//	kavach: variants: 12 of 64 done, about 40s left
func (p *progressLine) gradeProgress() func(done, total int) {
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

// suiteProgress is gradeProgress for a suite, whose fixtures are graded
// at once: it counts the fixtures graded.
//
//	kavach: fixtures: 1 of 3 graded, about 40s left
func (p *progressLine) suiteProgress() func(done, total int) {
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
