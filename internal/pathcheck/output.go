package pathcheck

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Kind is the kind of output a command writes.
type Kind int

const (
	Report Kind = iota // a report's JSON
	Page               // an HTML page
)

func (k Kind) String() string {
	if k == Page {
		return "a Kavach page"
	}
	return "a Kavach report"
}

// Input is a file a command reads, named for the error that refuses to
// write over it: "the fixture", "the new build".
type Input struct {
	What, Path string
}

// Output checks a path an output (a report, a page) is to be written at,
// before any work: it must not be one of the command's inputs (the same
// file by any name: a link, a relative path), and an existing file there
// must be an output of the same kind (a report Kavach wrote before, for a
// report; a page, for a page), which it may replace. Anything else is
// refused: an output never replaces what it was made from, nor a file
// Kavach did not write. flag names the option for the error ("--out").
// Out's checks come first.
func Output(flag, path string, kind Kind, inputs ...Input) error {
	if err := Out(path); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil // a new file
	}
	for _, in := range inputs {
		if in.Path == "" {
			continue
		}
		if ist, err := os.Stat(in.Path); (err == nil && os.SameFile(st, ist)) || filepath.Clean(in.Path) == filepath.Clean(path) {
			return fmt.Errorf("%s %s is %s: give the output a new file name", flag, path, in.What)
		}
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s %s exists and is not a regular file: give the output a new file name", flag, path)
	}
	if !isKind(path, st.Size(), kind) {
		return fmt.Errorf("%s %s exists and is not %s: give the output a new file name, or remove the file first", flag, path, kind)
	}
	return nil
}

// isKind says whether the file at path is an output of that kind, as
// Kavach writes it: a report is JSON whose first members are
// schema_version and verdict; a page is HTML ending with the page's
// footer. An empty file counts (an output begun and cut short).
func isKind(path string, size int64, kind Kind) bool {
	if size == 0 {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if kind == Report {
		return bytes.HasPrefix(bytes.TrimSpace(head), []byte("{")) &&
			bytes.Contains(head, []byte(`"schema_version"`)) && bytes.Contains(head, []byte(`"verdict"`))
	}
	if !bytes.HasPrefix(head, []byte("<!DOCTYPE html>")) {
		return false
	}
	tail := make([]byte, 8192)
	off := max(0, size-int64(len(tail)))
	n, _ = f.ReadAt(tail, off)
	return bytes.Contains(tail[:n], []byte(PageMark))
}

// PageMark is in the footer of every page Kavach writes.
const PageMark = "Written by <code>kavach report</code>"
