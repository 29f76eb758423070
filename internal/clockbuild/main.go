// Command clockbuild builds the replay's clock library (replay/clocklib)
// into Kavach's cache and prints its path: scripts/deps.sh runs it, so
// that the first replay does not compile it.
//
// With -page PATH it also writes a clock page there, its wall clock at
// -at (RFC 3339) and frozen, for a benchmark that runs a build under the
// clock by hand (bench/clock.sh): LD_PRELOAD=<printed path>
// KAVACH_CLOCK=PATH.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kavach-dev/kavach/replay"
)

func main() {
	page := flag.String("page", "", "write a frozen clock page at this path")
	at := flag.String("at", "2030-01-01T00:00:00Z", "the page's wall clock")
	flag.Parse()
	lib, err := replay.ClockLibrary()
	if err != nil {
		fail(err)
	}
	if *page != "" {
		t, err := time.Parse(time.RFC3339Nano, *at)
		if err != nil {
			fail(err)
		}
		dir, err := os.MkdirTemp(filepath.Dir(*page), ".clockbuild-")
		if err != nil {
			fail(err)
		}
		c, err := replay.NewClock(dir, t)
		if err != nil {
			fail(err)
		}
		c.Freeze()
		c.Close()
		if err := os.Rename(filepath.Join(dir, "kavach-clock"), *page); err != nil {
			fail(err)
		}
		os.Remove(dir)
	}
	fmt.Println(lib)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "clockbuild:", err)
	os.Exit(1)
}
