package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/record"
)

// keepFlags sets an always-on recording (--keep, --keep-bytes,
// --keep-after) in s, refusing what a cut cannot carry yet.
func keepFlags(c *cli.Context, s *record.Session) error {
	keep, bytes, after := c.Duration("keep"), c.Int64("keep-bytes"), c.Duration("keep-after")
	if !c.IsSet("keep") && !c.IsSet("keep-bytes") {
		if c.IsSet("keep-after") {
			return usagef("", "--keep-after is how long an always-on recording goes on past a failure before it cuts: give --keep DURATION too")
		}
		return nil
	}
	switch {
	case c.IsSet("keep") && keep <= 0:
		return usagef("", "--keep %s: give how much traffic before a failure to keep, such as 30s or 5m", keep)
	case c.IsSet("keep-bytes") && bytes <= 0:
		return usagef("", "--keep-bytes %d: give the disk the kept traffic may take, in bytes", bytes)
	case after < 0:
		return usagef("", "--keep-after %s: give a duration of zero or more", after)
	case s.Upstream != "" && s.State != fixtures.StateNone && s.State != fixtures.StateFirstTouch:
		return usagef("", "--keep in front of a running service takes --state first-touch (each segment captures the keys it touches) or none: a snapshot is not taken per segment (docs/record.md, \"Always on\")")
	case s.State == fixtures.StateFirstTouch && !s.NoWatch:
		return usagef("", "--keep --state first-touch needs --no-watch: the writes of other clients are not yet kept per segment (docs/record.md, \"Always on\")")
	case c.String("state-dir") != "":
		return usagef("", "--keep with --state-dir: a cut does not yet carry the state directory (docs/record.md, \"Always on\")")
	}
	if st, err := os.Stat(s.Out); err == nil && !st.IsDir() {
		return usagef("", "--out %q: with --keep, --out names the directory that receives the cuts, and this is a file", s.Out)
	}
	if pid, ok := record.RunningRecorder(s.Out); ok {
		return usagef("", "--out %q: the always-on recording of process %d writes its cuts there: give another directory", s.Out, pid)
	}
	record.ClearLeftovers(s.Out)
	s.Keep = &record.Keep{Duration: keep, Bytes: bytes, After: after}
	return nil
}
