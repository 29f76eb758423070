// Package reporoot is a test helper: it finds the repository's root from
// a test, whose working directory is its package's folder. It asks the
// runtime where this file was compiled from (runtime.Caller), which
// holds only inside a checkout: the kavach command must never link it
// (TestBinaryLinksNoRepoRoot), and finds the files it needs from the
// paths it is given.
package reporoot

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Find finds the repository root: the first directory holding go.mod
// and the given file, walking up from the working directory and then from
// this source file's directory.
func Find(file string) (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, src, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(src))
	}
	for _, dir := range starts {
		for {
			if isFile(filepath.Join(dir, "go.mod")) && isFile(filepath.Join(dir, file)) {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("repository root not found: no directory with go.mod and %s above %s", file, strings.Join(starts, " or "))
}

// Path is file (relative to the repository root) as an absolute path.
func Path(file string) (string, error) {
	root, err := Find(file)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, file), nil
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
