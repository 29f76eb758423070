package record

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/launch"
)

// Session configures one recording: a fixture, a proxy, and either a
// running service or a build that the session starts and stops itself.
type Session struct {
	// Out is the fixture to create; it must not exist.
	Out string
	// Proxy configures the proxy; its Fixture and Upstream are set by Run.
	Proxy Options
	// Upstream is the running service to record in front of, when Launch is nil.
	Upstream string
	// Launch, when set, is the old build to start with Proxy.Codec; the
	// recording ends when the build exits.
	Launch *kavach.Launch
	// ReadyFile, when set, receives the proxy's address once it accepts
	// connections (written to a temporary name and renamed).
	ReadyFile string
	// Grace is how long the proxy keeps running after the build exited,
	// for connections to see it go. Zero: 200 ms.
	Grace time.Duration
	// Volatile is written into the fixture's header (fixtures.Header.Volatile).
	Volatile []string
	// Redact is written into the fixture's header (fixtures.Header.Redact).
	Redact []string
	// State is how a recording in front of a running service takes the
	// state it holds (docs/record.md, "State"): fixtures.StateSnapshot,
	// StateFirstTouch, StateNone, or "" for the default (a snapshot, or
	// first touch where the service refuses one).
	State string
	// StateWhole keeps the whole snapshot rather than cutting it to the
	// keys the recording names.
	StateWhole bool
	// NoWatch leaves the writes of other clients unwatched (docs/record.md,
	// "Writes by other clients"): a replay then never applies them.
	NoWatch bool
	// StateBuild is the build that cuts the snapshot (a scratch instance
	// loads it); "" for the service's own executable, when it names one
	// on this machine.
	StateBuild string
	// StateDir, with Launch, is the directory of the files the build
	// loads at start-up and writes back (--state-dir): copied before the
	// build starts (the build is given a copy, as "{state}" in its
	// arguments and environment, and never writes into StateDir), and
	// written into the fixture as its state (fixtures.StateDir).
	StateDir string
	// Keep, when set, makes the recording always on (keep.go): Out is then
	// a directory (made when missing) that receives a fixture per cut.
	Keep *Keep
}

// Result is what a finished recording holds.
type Result struct {
	Stats   Stats
	Failure *kavach.Failure
	Reason  string // why the recording stopped
	Build   *fixtures.Build
	State   *fixtures.State // the state written: a running service's, or a launched build's state directory
	Cuts    []string        // with Keep, the cuts written, in order
}

// Run records until ctx is done (SIGINT, SIGTERM) or the launched build
// exits, then finishes the fixture cleanly with an end record. Every
// process and goroutine it started is gone when it returns.
func (s Session) Run(ctx context.Context, protocol string, started func(addr string)) (Result, error) {
	var res Result
	if err := s.checkKeep(); err != nil {
		return res, err
	}
	h := fixtures.Header{Protocol: protocol, Volatile: s.Volatile, Redact: s.Redact}
	upstream := s.Upstream
	var proc kavach.Process
	sd, err := s.openStateDir()
	if err != nil {
		return res, err
	}
	defer sd.close()
	if s.Launch != nil {
		var stop func() *kavach.Exit
		if proc, stop, err = s.startBuild(ctx, &h, sd); err != nil {
			return res, err
		}
		defer stop()
		upstream = proc.Addr()
		res.Build = h.Build
	} else {
		h.Upstream = upstream
	}
	var st *stateTaker
	if s.Launch == nil {
		var err error
		if st, err = s.takeState(ctx, upstream); err != nil {
			return res, err
		}
		if st != nil {
			defer st.close()
			h.State = st.mode
		} else if s.State == fixtures.StateNone {
			h.State = fixtures.StateNone
		}
	}
	h.Start = time.Now().UTC()
	w, k, abandon, err := s.create(h)
	if err != nil {
		return res, err
	}
	opts := s.Proxy
	opts.Fixture, opts.Upstream = w, upstream
	if st != nil {
		opts.Toucher = st.toucher
	}
	if res.State, err = sd.write(w); err != nil {
		abandon()
		return res, err
	}
	p, err := Start(opts, h.Start)
	if err != nil {
		abandon()
		return res, err
	}
	if k != nil {
		p.keep = true
		k.start(p)
	}
	if st != nil && st.watcher != nil {
		p.Watch(WatchOptions{Watcher: st.watcher, AfterMark: st.mode == fixtures.StateSnapshot, Capture: st.toucher.Origin()})
		st.watcher = nil // the proxy closes it
	}
	if s.ReadyFile != "" {
		if err := writeAtomic(s.ReadyFile, p.Addr().String()+"\n"); err != nil {
			p.Close()
			abandon()
			return res, err
		}
	}
	if started != nil {
		started(p.Addr().String())
	}

	res.Reason = s.wait(ctx, p, proc)
	closeErr := p.Close()
	res.Stats, res.Failure = p.Stats(), p.Failure()
	if k != nil {
		// The segments hold only a stretch: what was written is the cuts.
		var cutErr error
		res.Cuts, cutErr = k.finish()
		return res, errors.Join(closeErr, cutErr)
	}
	var stateErr error
	if st != nil {
		res.State, stateErr = st.finish(ctx, p, w, h.Start)
	}
	err = errors.Join(closeErr, p.Err(), stateErr, w.Close(fixtures.End{Duration: time.Since(h.Start), Reason: res.Reason}))
	return res, err
}

// checkKeep refuses an always-on recording of state its cuts cannot
// carry: a cut holds the keys its requests touch, captured in each
// segment (first-touch); neither a snapshot nor a state directory is
// taken per segment, and the writes of other clients are not watched.
func (s *Session) checkKeep() error {
	switch {
	case s.Keep == nil || s.Launch != nil && s.StateDir == "":
		return nil
	case s.StateDir != "":
		return errors.New("record: an always-on recording (Keep) does not carry a state directory in its cuts")
	case s.State != fixtures.StateNone && s.State != fixtures.StateFirstTouch:
		return errors.New("record: an always-on recording (Keep) in front of a running service takes its state first-touch (or none): a snapshot is not taken per segment")
	case s.State == fixtures.StateFirstTouch && !s.NoWatch:
		return errors.New("record: an always-on recording (Keep) with first-touch state does not watch the writes of other clients: give NoWatch")
	}
	return nil
}

// create creates the fixture the proxy writes to: Out, or with Keep the
// first segment of the keeper of the cuts directory Out. abandon undoes
// it for a recording that fails before its proxy serves anyone, which
// leaves no file: there is nothing in it, and a rerun must not find it.
func (s *Session) create(h fixtures.Header) (*fixtures.Writer, *keeper, func(), error) {
	if s.Keep != nil {
		k, err := newKeeper(s.Out, *s.Keep, h, s.Proxy.Codec)
		if err != nil {
			return nil, nil, nil, err
		}
		return k.writer(), k, k.abandon, nil
	}
	w, err := fixtures.Create(s.Out, h)
	if err != nil {
		return nil, nil, nil, err
	}
	return w, nil, func() {
		w.Close(fixtures.End{Reason: "did not start"})
		os.Remove(s.Out)
	}, nil
}

// wait waits for the recording's end: ctx done (SIGINT, SIGTERM), or the
// launched build's exit, whose failure is then recorded once every
// connection has had time to see it go. It returns why it ended.
func (s *Session) wait(ctx context.Context, p *Proxy, proc kavach.Process) string {
	var died <-chan struct{}
	if proc != nil {
		died = proc.Done()
	}
	select {
	case <-ctx.Done():
		return "stopped: " + context.Cause(ctx).Error()
	case <-died:
	}
	exit := proc.Exited()
	grace := s.Grace
	if grace == 0 {
		grace = 200 * time.Millisecond
	}
	time.Sleep(grace) // let every connection see the close and record it
	p.BuildDied(exit)
	return "the build exited: " + exit.String()
}

// startBuild starts the launched build (s.Launch, made absolute, given
// the state directory's copy) for the recording, and fills in what the
// header says of it. The build outlives ctx; the caller stops it.
func (s *Session) startBuild(ctx context.Context, h *fixtures.Header, sd *stateDir) (kavach.Process, func() *kavach.Exit, error) {
	// Record the build as an absolute path, found on PATH like any
	// command when it has no slash, so replays start the same file.
	build := *s.Launch
	if p, err := exec.LookPath(build.Path); err == nil {
		build.Path = p
	}
	if p, err := filepath.Abs(build.Path); err == nil {
		build.Path = p
	}
	build.State = sd.path()
	s.Launch = &build
	sum, err := fixtures.SHA256File(s.Launch.Path)
	if err != nil {
		return nil, nil, &launch.StartError{Path: s.Launch.Path, Reason: "cannot be started: " + err.Error()}
	}
	// The build outlives ctx: the recording stops first, and stops it
	// once the proxy is closed.
	proc, err := s.Proxy.Codec.Start(context.WithoutCancel(ctx), *s.Launch)
	if err != nil {
		return nil, nil, err
	}
	upstream := proc.Addr()
	version := ""
	if identify := s.Proxy.Codec.Abilities().Identify; identify != nil {
		version = identify(ctx, *s.Launch)
	} else {
		version = s.Proxy.Codec.Version(ctx, upstream)
	}
	h.Build = &fixtures.Build{Path: s.Launch.Path, SHA256: sum, Version: version}
	h.Launch, h.State = s.Launch, sd.mode()
	// Redacting, the integration removes secrets from the launch
	// arguments written to the header (the build gets them as given).
	if redactArgs := s.Proxy.Codec.Abilities().RedactArgs; s.Proxy.Redactor != nil && redactArgs != nil {
		hl := *s.Launch
		hl.Args = redactArgs(hl.Args)
		h.Launch = &hl
	}
	return proc, proc.Stop, nil
}

func writeAtomic(path, content string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Running is a Session running in the background (Session.Go).
type Running struct {
	// Addr is where clients connect.
	Addr   string
	cancel context.CancelFunc
	done   chan struct{}
	res    Result
	err    error
}

// Go starts the session in the background and returns once its proxy
// accepts connections, or the session failed to start.
func (s Session) Go(ctx context.Context, protocol string) (*Running, error) {
	ctx, cancel := context.WithCancel(ctx)
	r := &Running{cancel: cancel, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(r.done)
		r.res, r.err = s.Run(ctx, protocol, func(a string) { addr <- a })
	}()
	select {
	case r.Addr = <-addr:
		return r, nil
	case <-r.done:
		cancel()
		return nil, r.err
	}
}

// Wait waits for the session to end by itself (the launched build exited)
// or for at most d, then stops it; it returns the session's result.
func (r *Running) Wait(d time.Duration) (Result, error) {
	select {
	case <-r.done:
	case <-time.After(d):
	}
	return r.Stop()
}

// Stop stops the session, as Ctrl-C would, and waits for it to finish.
func (r *Running) Stop() (Result, error) {
	r.cancel()
	<-r.done
	return r.res, r.err
}
