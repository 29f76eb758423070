package replay

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestClockPrepare: a time written ahead is what a Set to it puts in
// place, a Set to another time writes that time (the guess was wrong),
// and a file prepared and not yet used never replaces the clock's.
func TestClockPrepare(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 3, 1, 10, 0, 2, 0, time.UTC)
	c, err := NewClock(dir, start)
	if err != nil {
		t.Fatal(err)
	}
	read := func() string {
		t.Helper()
		b, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }

	if err := c.Prepare(at(2)); err != nil {
		t.Fatal(err)
	}
	if got, want := read(), "2026-03-01 10:00:02.000500"; got != want {
		t.Fatalf("after Prepare, the clock reads %q, want %q: a prepared time must not be in place before Set", got, want)
	}
	if err := c.Set(at(2)); err != nil {
		t.Fatal(err)
	}
	if got, want := read(), "2026-03-01 10:00:02.002500"; got != want {
		t.Fatalf("Set to the prepared time: clock reads %q, want %q", got, want)
	}
	if _, err := os.Stat(c.path + ".next"); !os.IsNotExist(err) {
		t.Fatalf("the prepared file was not renamed into place: %v", err)
	}

	// A wrong guess: the next move goes elsewhere.
	if err := c.Prepare(at(4)); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(at(3)); err != nil {
		t.Fatal(err)
	}
	if got, want := read(), "2026-03-01 10:00:02.003500"; got != want {
		t.Fatalf("Set past a wrong guess: clock reads %q, want %q", got, want)
	}
	// The guess is still good for its own time.
	if err := c.Set(at(4)); err != nil {
		t.Fatal(err)
	}
	if got, want := read(), "2026-03-01 10:00:02.004500"; got != want {
		t.Fatalf("Set to the time prepared before a wrong guess: clock reads %q, want %q", got, want)
	}
	// Prepared again for a time already set: nothing to write.
	if err := c.Prepare(at(4)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.path + ".next"); !os.IsNotExist(err) {
		t.Fatalf("Prepare of the time in place wrote a file: %v", err)
	}
}
