package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/launch"
)

// stateDir is a launched build's state directory taken for one recording
// (Session.StateDir; docs/record.md, "State"): the operator's directory
// as a tar stream in a temporary file beside the fixture, and that stream
// extracted into a fresh directory, which the build is started from (each
// start copies it again). So the build never writes into the operator's
// directory, and it starts from exactly what its replays will start from.
type stateDir struct {
	src   string // the operator's directory
	tar   string // its tar stream, beside the fixture
	tmp   string // a fresh directory of Kavach's own (kavach-state-PID-...)
	dir   string // the stream extracted in tmp: Launch.State
	files int
}

// CheckStateDir says what is wrong with dir as a state directory: it
// must exist and be a directory.
func CheckStateDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("no such directory")
	case err != nil:
		return err
	case !st.IsDir():
		return errors.New("not a directory")
	}
	return nil
}

// openStateDir takes the state directory of s (takeStateDir); nil when
// it names none. A running service's recording has none to take.
func (s Session) openStateDir() (*stateDir, error) {
	if s.StateDir == "" {
		return nil, nil
	}
	if s.Launch == nil {
		return nil, errors.New("record: a state directory is a launched build's: give -- BUILD ARGS, not --upstream (a running service's state is taken with --state)")
	}
	return takeStateDir(s.Out, s.StateDir)
}

// path is the extracted directory the build is started from
// (Launch.State); "" for none.
func (sd *stateDir) path() string {
	if sd == nil {
		return ""
	}
	return sd.dir
}

// mode is the header's state mode (fixtures.StateDir); "" for none.
func (sd *stateDir) mode() string {
	if sd == nil {
		return ""
	}
	return fixtures.StateDir
}

// takeStateDir takes the state directory src for a recording into out.
func takeStateDir(out, src string) (*stateDir, error) {
	if err := CheckStateDir(src); err != nil {
		return nil, fmt.Errorf("record: --state-dir %s: %w", src, err)
	}
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".state-*")
	if err != nil {
		return nil, fmt.Errorf("record: state directory: %w", err)
	}
	sd := &stateDir{src: src, tar: f.Name()}
	sd.files, err = fixtures.TarDir(src, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil {
		sd.tmp, err = os.MkdirTemp("", launch.DirPattern("state"))
	}
	if err == nil {
		err = sd.extract()
	}
	if err != nil {
		sd.close()
		return nil, fmt.Errorf("record: %w", err)
	}
	return sd, nil
}

// extract extracts the tar stream into tmp/state, as a replay does.
func (sd *stateDir) extract() error {
	f, err := os.Open(sd.tar)
	if err != nil {
		return err
	}
	defer f.Close()
	into := filepath.Join(sd.tmp, "state")
	if _, err := fixtures.ExtractTar(f, into); err != nil {
		return err
	}
	sd.dir = into
	return nil
}

// write writes the state directory's tar stream and its state record to
// the fixture, before the proxy serves anyone (a recording killed later
// keeps it); nothing for none.
func (sd *stateDir) write(w *fixtures.Writer) (*fixtures.State, error) {
	if sd == nil {
		return nil, nil
	}
	f, err := os.Open(sd.tar)
	if err != nil {
		return nil, fmt.Errorf("record: state directory: %w", err)
	}
	defer f.Close()
	st := &fixtures.State{Mode: fixtures.StateDir, Format: fixtures.StateFormatTar, Files: sd.files}
	if err := w.WriteState(st, f, nil); err != nil {
		return nil, err
	}
	return st, nil
}

// close removes the temporary file and directory.
func (sd *stateDir) close() {
	if sd == nil {
		return
	}
	if sd.tar != "" {
		os.Remove(sd.tar)
	}
	if sd.tmp != "" {
		os.RemoveAll(sd.tmp)
	}
}
