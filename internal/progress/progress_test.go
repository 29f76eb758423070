package progress

import (
	"bytes"
	"testing"
	"time"
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

// TestLineClearsBeforeWrite: a drawn line is cleared before a message is
// written, and when the suite is done.
func TestLineClearsBeforeWrite(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	p := &Line{w: &buf, tty: true, now: func() time.Time { return now }}
	progress := p.SuiteProgress()
	now = now.Add(4 * time.Second)
	progress(1, 3)
	p.Write([]byte("kavach: warning\n"))
	progress(3, 3)
	want := "\r\033[Kkavach: fixtures: 1 of 3 graded, about 8s left" + "\r\033[K" + "kavach: warning\n"
	if got := buf.String(); got != want {
		t.Errorf("written %q, want %q", got, want)
	}
}
