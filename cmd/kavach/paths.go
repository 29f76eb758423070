package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// checkDiffPaths checks every path a diff is given before anything is
// replayed, so that a mistake costs no grading: the builds exist and are
// files, the invariants file (if given) exists, and the report can be
// written where it is asked for.
func checkDiffPaths(r diffRequest, out string) error {
	for _, b := range []struct{ name, path string }{{"old build", r.Old}, {"new build", r.New}} {
		if err := checkFile(b.path); err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
	}
	if r.Invariants != "" {
		if err := checkFile(r.Invariants); err != nil {
			return fmt.Errorf("invariants: %w", err)
		}
	}
	if out != "" {
		if err := checkOut(out); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	return nil
}

// checkFile says what is wrong with a path that must be an existing file.
func checkFile(path string) error {
	st, err := os.Stat(path)
	switch {
	case err != nil && errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist%s", path, relativeTo(path))
	case err != nil:
		return err
	case st.IsDir():
		return fmt.Errorf("%s is a directory", path)
	}
	return nil
}

// checkOut checks that a report can be written at path: its directory
// exists and takes a new file, and path is not a directory. It writes
// nothing that stays.
func checkOut(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory: give a file's path", path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err != nil && errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("directory %s does not exist%s: create it, or give a path in an existing directory", dir, relativeTo(dir))
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
