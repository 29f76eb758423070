package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// openPTY opens a pseudo-terminal: the side to read and the terminal a
// command writes to.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var n uint32
	unlock := int32(0)
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatal(e)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatal(e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A terminal as a person's is: 120 columns, 40 rows (a new pty has 0).
	size := struct{ rows, cols, x, y uint16 }{40, 120, 0, 0}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, s.Fd(), syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&size))); e != 0 {
		t.Fatal(e)
	}
	return m, s
}

// TestInterrupt: SIGINT or SIGTERM while kavach diff grades stops it with
// exit 130 or 143 and "interrupted" (not exit 2, "could not grade"), its
// builds stopped. On a terminal, the progress line names what it counts
// and is cleared before the message.
func TestInterrupt(t *testing.T) {
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOld)...)
	pristine := redisbuild.MustBuild(t)
	dir := t.TempDir()
	fixture := filepath.Join(dir, "getrange.kavach")
	if err := incidents.RecordGetrange(fixture, old); err != nil {
		t.Fatal(err)
	}
	bin, err := exec.LookPath("kavach")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		name string
	}{{syscall.SIGINT, 130, "SIGINT"}, {syscall.SIGTERM, 143, "SIGTERM"}} {
		t.Run(tc.name, func(t *testing.T) {
			master, tty := openPTY(t)
			defer master.Close()
			cmd := exec.Command(bin, "diff", old, pristine, fixture, "--variants", "64", "-j", "1", "--out", filepath.Join(dir, "report.json"))
			cmd.Env = append(os.Environ(), "TERM=xterm")
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			cmd.Stderr = tty
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			tty.Close()
			// Read the terminal until the variants are under way.
			var screen bytes.Buffer
			lines := make(chan []byte)
			go func() {
				defer close(lines)
				buf := make([]byte, 4096)
				for {
					n, err := master.Read(buf)
					if n > 0 {
						lines <- append([]byte(nil), buf[:n]...)
					}
					if err != nil {
						return
					}
				}
			}()
			for !strings.Contains(screen.String(), "kavach: variants: ") {
				b, ok := <-lines
				if !ok {
					t.Fatalf("the terminal closed before the variants ran:\n%q", screen.String())
				}
				screen.Write(b)
			}
			kids := children(cmd.Process.Pid)
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			for b := range lines {
				screen.Write(b)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Errorf("exit: %v, want status %d", err, tc.code)
			}
			out := screen.String()
			t.Logf("terminal:\n%q", out)
			if !regexp.MustCompile(`kavach: replays of the fixture: \d+ of \d+ done`).MatchString(out) {
				t.Errorf("progress does not name the fixture's replays")
			}
			if !strings.Contains(out, " done, about ") || !strings.Contains(out, "s left") {
				t.Errorf("progress gives no estimate of the time left")
			}
			if !onClearedLine(out, "kavach: interrupted by "+tc.name+"\r\n") {
				t.Errorf("the message is not on a cleared line of its own, or does not say interrupted")
			}
			if strings.Contains(out, "could not") {
				t.Errorf("an interrupt is reported as a failure to grade")
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout: %q, want nothing (no verdict)", stdout.String())
			}
			for _, pid := range kids {
				if alive(pid) {
					t.Errorf("process %s, started by kavach diff, is still running", pid)
				}
			}
		})
	}
}

// onClearedLine reports whether msg is in out at the start of a line:
// between it and the line break or carriage return before it there are
// only escape sequences (the progress line erased), no text.
func onClearedLine(out, msg string) bool {
	i := strings.LastIndex(out, msg)
	if i < 0 {
		return false
	}
	before := out[:i]
	line := before[max(strings.LastIndexAny(before, "\r\n")+1, 0):]
	return ansi.ReplaceAllString(line, "") == ""
}

// ansi matches a terminal's control sequences (CSI: ESC [ ... letter).
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// alive reports whether a process is running (not a zombie), giving a
// killed one a moment to go.
func alive(pid string) bool {
	deadline := time.Now().Add(3 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return false
		}
		if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
}
