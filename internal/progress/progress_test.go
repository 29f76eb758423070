package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/vbauerster/mpb/v8"

	"github.com/kavach-dev/kavach/internal/syncbuf"
)

// TestTimeLeft: nothing until an item is done and one is left; under a
// second, or the time rounded to the second.
func TestTimeLeft(t *testing.T) {
	for _, tc := range []struct {
		took    time.Duration
		done, n int
		want    string
	}{
		{10 * time.Second, 0, 5, ""},
		{10 * time.Second, 5, 0, ""},
		{100 * time.Millisecond, 1, 1, ", under a second left"},
		{10 * time.Second, 2, 3, ", about 15s left"},
		{1500 * time.Millisecond, 1, 1, ", about 2s left"},
	} {
		if got := timeLeft(tc.took, tc.done, tc.n); got != tc.want {
			t.Errorf("timeLeft(%v, %d, %d) = %q, want %q", tc.took, tc.done, tc.n, got, tc.want)
		}
	}
}

// TestLineNotTerminal: on a writer that is not a terminal nothing is
// drawn (no progress func), and writes pass through as they are.
func TestLineNotTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := New(&buf)
	if p.GradeProgress() != nil || p.SuiteProgress() != nil {
		t.Error("progress funcs for a writer that is not a terminal")
	}
	p.Write([]byte("kavach: hello\n"))
	if got := buf.String(); got != "kavach: hello\n" {
		t.Errorf("written %q", got)
	}
}

// TestLineDrawsAndWritesAbove: on a terminal (forced here, mpb drawing
// into a buffer, where each refresh is a line of its own) the suite's
// line is drawn with what it counts and the time left, a message written
// meanwhile comes out whole on a line of its own, and once the line is
// closed a write passes through as it is.
func TestLineDrawsAndWritesAbove(t *testing.T) {
	var buf syncbuf.Buffer
	now := time.Unix(0, 0)
	p := &Line{w: &buf, tty: true, now: func() time.Time { return now },
		opts: []mpb.ContainerOption{mpb.WithAutoRefresh(), mpb.WithRefreshRate(5 * time.Millisecond)}}
	progress := p.SuiteProgress()
	now = now.Add(4 * time.Second)
	progress(1, 3)
	time.Sleep(50 * time.Millisecond) // a few refreshes
	p.Write([]byte("kavach: warning\n"))
	time.Sleep(50 * time.Millisecond)
	progress(3, 3)
	p.Close()
	out := buf.String()
	for _, want := range []string{"kavach: fixtures: 1 of 3 graded, about 8s left", "\nkavach: warning\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("drawn %q, want %q in it", out, want)
		}
	}
	p.Write([]byte("kavach: done\n"))
	if !strings.HasSuffix(buf.String(), "kavach: done\n") {
		t.Errorf("after Close, a write is not passed through: %q", buf.String())
	}
}
