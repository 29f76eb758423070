package launch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// LaunchRefused is a launch argument recorded in a fixture that Kavach will
// not start a build with: fixtures are untrusted input, and their launch
// arguments pass the integration's allowlist (see docs/security.md).
type LaunchRefused struct {
	Arg string // the argument, with its values
	Why string // what kind of setting it is
}

func (e *LaunchRefused) Error() string {
	return fmt.Sprintf("fixture launch argument %s refused: %s (fixtures may set only what changes the behaviour under test; "+
		"--trust-fixture-launch passes it on, and Kavach's own loopback, directory and persistence settings still win)", e.Arg, e.Why)
}

// CheckExecutable looks into the build at path before it is started, to
// refuse a program of another kind than the fixture's: when path is an ELF
// executable, it must hold one of want (if any are given) and none of
// notWant. what names what it must be, for the error. A file that is not
// ELF (a script) passes: what it starts cannot be told from its bytes. A
// file that cannot be read passes too: starting it says why.
func CheckExecutable(path, what string, want, notWant []string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != "\x7fELF" {
		return nil
	}
	found, err := holds(f, append(append([]string(nil), want...), notWant...))
	if err != nil {
		return nil
	}
	for _, m := range notWant {
		if found[m] {
			return fmt.Errorf("build %s is not %s: it holds %q", path, what, strings.TrimRight(m, ":"))
		}
	}
	if len(want) == 0 {
		return nil
	}
	for _, m := range want {
		if found[m] {
			return nil
		}
	}
	return fmt.Errorf("build %s is not %s: it holds none of %s",
		path, what, strings.Join(want, ", "))
}

// Holds says whether the file at path holds one of markers anywhere in its
// bytes (a library it links); false when it cannot be read.
func Holds(path string, markers ...string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	found, err := holds(f, markers)
	return err == nil && len(found) > 0
}

// Jemalloc are the marks of a program linked with jemalloc: the shared
// library's name, or the version string a bundled copy reports.
var Jemalloc = []string{"libjemalloc.so", "jemalloc-3.", "jemalloc-4.", "jemalloc-5.", "jemalloc-6."}

// holds reads r to its end and says which of the markers it contains.
func holds(r io.Reader, markers []string) (map[string]bool, error) {
	found := map[string]bool{}
	overlap := 0
	for _, m := range markers {
		overlap = max(overlap, len(m)-1)
	}
	buf := make([]byte, 0, 1<<20+overlap)
	chunk := make([]byte, 1<<20)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for _, m := range markers {
			if !found[m] && bytes.Contains(buf, []byte(m)) {
				found[m] = true
			}
		}
		if len(buf) > overlap {
			buf = append(buf[:0], buf[len(buf)-overlap:]...)
		}
		if errors.Is(err, io.EOF) {
			return found, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
