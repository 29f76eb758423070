package record

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kavach-dev/kavach/fixtures"
)

// PidFile is the file in an always-on recording's cuts directory that
// names the recorder's process, for `kavach record --cut DIR` (AskCut) to
// find the recorder to signal.
const PidFile = ".kavach-record.pid"

// RunningRecorder is the process of the always-on recording whose pid
// file is in dir, and whether it is alive: a second recorder must not
// share its cuts directory.
func RunningRecorder(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, PidFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}

// ClearLeftovers removes what an always-on recording killed in dir left
// (kill -9): its segments, a cut's temporary file, its pid file, so that
// a new recording there starts clean. The cuts are never touched.
func ClearLeftovers(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".segments-") || n == PidFile || strings.HasPrefix(n, ".") && strings.HasSuffix(n, fixtures.Ext+".tmp") {
			os.RemoveAll(filepath.Join(dir, n))
		}
	}
}

// CutOnSignal makes s's always-on recording cut on SIGUSR1 (Keep.Cut),
// so that a cut can be asked for from outside the process (AskCut).
// started writes the pid file AskCut reads, once the recording runs;
// stop undoes both. Without Keep both do nothing.
func (s *Session) CutOnSignal() (started func(), stop func()) {
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
	pid := filepath.Join(s.Out, PidFile)
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

// AskCut is `kavach record --cut DIR` (or a pid file): it sends the
// recorder whose pid file target names SIGUSR1 and waits, at most
// timeout, for the cut to appear in its directory. It returns the cut's
// path.
func AskCut(target string, timeout time.Duration) (string, error) {
	dir, pidPath := target, filepath.Join(target, PidFile)
	if st, err := os.Stat(target); err == nil && !st.IsDir() {
		dir, pidPath = filepath.Dir(target), target
	}
	b, err := os.ReadFile(pidPath)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("--cut %q: no always-on recording runs there (no %s): give the --out directory of a 'kavach record --keep'", target, PidFile)
	}
	if err != nil {
		return "", fmt.Errorf("--cut: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return "", fmt.Errorf("--cut %q: %s does not hold a process id", target, pidPath)
	}
	before := CutNames(dir)
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return "", fmt.Errorf("--cut: the recorder (process %d) is gone: %w", pid, err)
	}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for name := range CutNames(dir) {
			if !before[name] {
				return filepath.Join(dir, name), nil
			}
		}
	}
	return "", fmt.Errorf("--cut: no cut appeared in %s within %s (the recorder's log says why)", dir, timeout)
}

// CutNames is the cuts in dir, by file name: its fixtures, less the
// hidden files of a cut being written.
func CutNames(dir string) map[string]bool {
	names := map[string]bool{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, fixtures.Ext) && !strings.HasPrefix(n, ".") {
			names[n] = true
		}
	}
	return names
}
