// Package pathcheck says what is wrong with a path before any work is
// done with it, in words that say what to do: the command line and the
// MCP tool check every path they are given with it.
package pathcheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// File says what is wrong with a path that must be an existing file.
func File(path string) error {
	st, err := os.Stat(path)
	switch {
	case err != nil && errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist%s", path, RelativeTo(path))
	case err != nil:
		return err
	case st.IsDir():
		return fmt.Errorf("%s is a directory", path)
	}
	return nil
}

// Out checks that a file can be written at path: its directory exists and
// takes a new file, and path is not a directory. It leaves nothing behind.
func Out(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory: give a file's path", path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err != nil && errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("directory %s does not exist%s: create it, or give a path in an existing directory", dir, RelativeTo(dir))
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".check-*")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", dir, errors.Unwrap(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// RelativeTo says where a relative path was looked for; "" for an
// absolute one.
func RelativeTo(path string) string {
	if filepath.IsAbs(path) {
		return ""
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	return " (relative paths are taken from kavach's working directory, " + wd + ")"
}
