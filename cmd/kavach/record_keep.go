package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/internal/jsonout"
	"github.com/kavach-dev/kavach/record"
)

// pidFile is the file in an always-on recording's cuts directory that
// names the recorder's process, for `kavach record --cut DIR`.
const pidFile = ".kavach-record.pid"

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
	if pid, ok := runningRecorder(s.Out); ok {
		return usagef("", "--out %q: the always-on recording of process %d writes its cuts there: give another directory", s.Out, pid)
	}
	leftovers(s.Out)
	s.Keep = &record.Keep{Duration: keep, Bytes: bytes, After: after}
	return nil
}

// runningRecorder is the always-on recording whose pid file is in dir,
// when its process is alive.
func runningRecorder(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}

// leftovers removes what an always-on recording killed in dir left (kill
// -9): its segments, a cut's temporary file, its pid file. The cuts are
// never touched.
func leftovers(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".segments-") || n == pidFile || strings.HasPrefix(n, ".") && strings.HasSuffix(n, fixtures.Ext+".tmp") {
			os.RemoveAll(filepath.Join(dir, n))
		}
	}
}

// cuts asks s's recording for a cut on SIGUSR1, and writes the pid file
// that `kavach record --cut` reads; the returned func undoes both.
func cuts(s *record.Session) (started func(), stop func()) {
	if s.Keep == nil {
		return func() {}, func() {}
	}
	ch := make(chan struct{}, 1)
	s.Keep.Cut = ch
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sigs:
				select {
				case ch <- struct{}{}:
				default: // a cut is asked for already
				}
			case <-done:
				return
			}
		}
	}()
	pid := filepath.Join(s.Out, pidFile)
	return func() {
			tmp := pid + ".tmp"
			if os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644) == nil {
				os.Rename(tmp, pid)
			}
		}, func() {
			signal.Stop(sigs)
			close(done)
			os.Remove(pid)
		}
}

// askCut is `kavach record --cut DIR` (or a pid file): it sends the
// recorder SIGUSR1 and waits for the cut to appear in its directory,
// whose path it prints.
func askCut(target string, timeout time.Duration, stdout io.Writer) error {
	dir, pidPath := target, filepath.Join(target, pidFile)
	if st, err := os.Stat(target); err == nil && !st.IsDir() {
		dir, pidPath = filepath.Dir(target), target
	}
	b, err := os.ReadFile(pidPath)
	if errors.Is(err, os.ErrNotExist) {
		return usagef("", "--cut %q: no always-on recording runs there (no %s): give the --out directory of a 'kavach record --keep'", target, pidFile)
	}
	if err != nil {
		return fmt.Errorf("--cut: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return usagef("", "--cut %q: %s does not hold a process id", target, pidPath)
	}
	before := cutNames(dir)
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return fmt.Errorf("--cut: the recorder (process %d) is gone: %w", pid, err)
	}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for name := range cutNames(dir) {
			if !before[name] {
				fmt.Fprintln(stdout, filepath.Join(dir, name))
				return nil
			}
		}
	}
	return fmt.Errorf("--cut: no cut appeared in %s within %s (the recorder's log says why)", dir, timeout)
}

// cutNames is the cuts in dir.
func cutNames(dir string) map[string]bool {
	names := map[string]bool{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, fixtures.Ext) && !strings.HasPrefix(n, ".") {
			names[n] = true
		}
	}
	return names
}

// printCuts says what an always-on recording cut.
func printCuts(w io.Writer, res record.Result) {
	fmt.Fprintf(w, "kavach: %d requests, %d replies on %d connections (%s)\n",
		res.Stats.Requests, res.Stats.Responses, res.Stats.Conns, res.Reason)
	for _, p := range res.Cuts {
		fmt.Fprintf(w, "kavach: cut %s\n", p)
	}
	if len(res.Cuts) == 0 {
		fmt.Fprintln(w, "kavach: no cut: no failure was detected and none was asked for")
	}
}

// printCutsJSON prints what an always-on recording did as `kavach record
// --keep --json` does: its counts, why it ended, and its cuts in order.
func printCutsJSON(w io.Writer, res record.Result) error {
	cuts := res.Cuts
	if cuts == nil {
		cuts = []string{}
	}
	return jsonout.Print(w, struct {
		Cuts        []string `json:"cuts"`
		Requests    uint64   `json:"requests"`
		Responses   uint64   `json:"responses"`
		Connections uint64   `json:"connections"`
		Ended       string   `json:"ended"`
	}{cuts, res.Stats.Requests, res.Stats.Responses, res.Stats.Conns, res.Reason})
}
