package record

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/replay"
)

// stateTaker takes the state a running service holds for one recording
// (docs/record.md, "State"): a snapshot taken before the proxy serves
// anyone, and a Toucher told every request, which captures keys at first
// touch or, beside a snapshot, learns which keys the recording names.
type stateTaker struct {
	s       Session
	in      kavach.Integration
	ab      *kavach.StateTaking
	mode    string
	note    string // why the mode is what it is
	addr    string
	data    string // the snapshot's temporary file; "" in first-touch mode
	exe     string // the service's executable as it named it when the snapshot was taken
	toucher kavach.Toucher
	// watcher follows the service's feed for the writes of other clients
	// (foreign.go), started before the snapshot so that it sees its mark;
	// nil when not watched (watchNote says why).
	watcher   kavach.Watcher
	watchNote string
}

// takeState starts taking the state of the service at addr as s asks; nil
// when it takes none.
func (s Session) takeState(ctx context.Context, addr string) (*stateTaker, error) {
	ab := s.Proxy.Codec.Abilities().State
	mode := s.State
	switch {
	case mode == fixtures.StateNone:
		return nil, nil
	case ab == nil && mode != "":
		return nil, fmt.Errorf("--state %s: the %s protocol's recordings hold no state of a running service", mode, s.Proxy.Codec.Protocol())
	case ab == nil:
		return nil, nil
	}
	st := &stateTaker{s: s, in: s.Proxy.Codec, ab: ab, mode: mode, addr: addr}
	st.watch(ctx)
	if mode == "" || mode == fixtures.StateSnapshot {
		err := st.snapshot(ctx)
		switch {
		case err == nil:
			st.mode = fixtures.StateSnapshot
			if ab.Executable != nil {
				// Asked now: a service that crashes in the incident
				// cannot say it at the end.
				st.exe = ab.Executable(ctx, addr)
			}
		case mode == "" && errors.Is(err, kavach.ErrRefused):
			st.mode, st.note = fixtures.StateFirstTouch, err.Error()+": keys captured at first touch instead"
		default:
			st.close()
			return nil, fmt.Errorf("record: state of %s: %w (--state first-touch captures keys as they are first named; --state none takes no state)", addr, err)
		}
	}
	t, err := ab.NewToucher(ctx, addr, st.mode == fixtures.StateFirstTouch)
	if err != nil {
		st.close()
		return nil, fmt.Errorf("record: %w", err)
	}
	st.toucher = t
	return st, nil
}

// snapshot streams the service's snapshot into a temporary file beside
// the fixture (so a recording killed before it ends leaves it there, not
// nowhere).
func (st *stateTaker) snapshot(ctx context.Context) error {
	f, err := os.CreateTemp(filepath.Dir(st.s.Out), "."+filepath.Base(st.s.Out)+".state-*")
	if err != nil {
		return err
	}
	st.data = f.Name()
	_, err = st.ab.Snapshot(ctx, st.addr, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(st.data)
		st.data = ""
	}
	return err
}

// watch starts following the service's feed, unless asked not to; a
// service that refuses it is recorded without (the note says so).
func (st *stateTaker) watch(ctx context.Context) {
	switch {
	case st.s.NoWatch:
		st.watchNote = "writes of other clients not watched (--no-watch)"
	case st.ab.Watch == nil:
		st.watchNote = "writes of other clients not watched: the protocol cannot"
	default:
		w, err := st.ab.Watch(ctx, st.addr)
		if err != nil {
			st.watchNote = "writes of other clients not watched: " + err.Error()
			return
		}
		st.watcher = w
	}
}

func (st *stateTaker) close() {
	if st.toucher != nil {
		st.toucher.Close()
	}
	if st.watcher != nil {
		st.watcher.Close()
	}
	if st.data != "" {
		os.Remove(st.data)
	}
}

// finish writes the state record (and the snapshot, whole or cut to the
// keys the recording named) once the proxy is closed.
func (st *stateTaker) finish(ctx context.Context, p *Proxy, w *fixtures.Writer, start time.Time) (*fixtures.State, error) {
	state := fixtures.State{Mode: st.mode, Note: st.note}
	st.foreign(p, &state)
	if st.mode == fixtures.StateFirstTouch {
		n, bytes, err := p.Captured()
		if err != nil {
			state.Note = join(state.Note, "incomplete: "+err.Error())
		}
		if why := st.toucher.Whole(); why != "" {
			state.Note = join(state.Note, why+": first-touch state holds only the keys named (record with --state snapshot)")
		}
		state.Keys, state.Bytes = n, bytes
		return &state, w.Write(fixtures.Record{Kind: fixtures.KindState, State: &state})
	}
	why := st.toucher.Whole()
	if st.s.StateWhole {
		why = "asked for the whole snapshot"
	}
	// A scratch instance of the build loads the snapshot, its clocks at
	// the recording's start: it counts the keys (which every replay
	// checks) and, unless the whole is kept, gives the named ones.
	keys, held, err := st.scratch(context.WithoutCancel(ctx), start, why == "")
	if err == nil && why == "" {
		state.Note = join(state.Note, fmt.Sprintf("cut to the keys the recording names (%d named, %d held)", len(st.toucher.Names()), len(keys)))
		return &state, w.WriteState(&state, nil, keys)
	}
	if err != nil {
		why = join(why, "not counted or cut: "+err.Error())
	}
	f, err := os.Open(st.data)
	if err != nil {
		return nil, fmt.Errorf("record: snapshot: %w", err)
	}
	defer f.Close()
	state.Format, state.Whole, state.Databases, state.Note = st.ab.Format, true, held, join(state.Note, "whole: "+why)
	return &state, w.WriteState(&state, f, nil)
}

// scratch starts a scratch instance of the build from the snapshot, its
// clock at the recording's start, and asks it how many keys each database
// holds and, with cut, for the keys named.
func (st *stateTaker) scratch(ctx context.Context, start time.Time, cut bool) ([]kavach.KeyState, map[int]int, error) {
	build := cmp.Or(st.s.StateBuild, st.exe)
	if build == "" {
		return nil, nil, errors.New("no build to load it: the service does not name its executable (give --state-build)")
	}
	if _, err := os.Stat(build); err != nil {
		// Redis names its executable from its working directory and the
		// name it was started by: a server started as "redis-server" is
		// the one on PATH.
		p, lerr := exec.LookPath(filepath.Base(build))
		if st.s.StateBuild != "" || lerr != nil {
			return nil, nil, fmt.Errorf("no build to load it: %v (give --state-build)", err)
		}
		build = p
	}
	// A large snapshot takes the scratch instance a while to load (a
	// gigabyte: about six seconds idle, more under load): it is given
	// minutes, not the ten seconds a build's start usually gets.
	proc, stop, err := replay.StartAt(ctx, st.in.WithStartTimeout(scratchStartTimeout), kavach.Launch{Path: build, Data: st.data}, start)
	if err != nil {
		return nil, nil, err
	}
	defer stop()
	var held map[int]int
	if count := st.in.Abilities().Held; count != nil {
		if held, err = count(ctx, proc.Addr()); err != nil {
			return nil, nil, err
		}
	}
	if !cut || len(st.toucher.Names()) == 0 {
		return nil, held, nil
	}
	keys, err := st.ab.Cut(ctx, proc.Addr(), st.toucher.Names(), start)
	return keys, held, err
}

// scratchStartTimeout bounds the start of the scratch instance that loads
// a snapshot.
const scratchStartTimeout = 10 * time.Minute

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// foreign says in state what the watch of other clients' writes saw.
func (st *stateTaker) foreign(p *Proxy, state *fixtures.State) {
	if st.watchNote != "" {
		state.Note = join(state.Note, st.watchNote)
		return
	}
	fs, ended := p.Foreign()
	state.Foreign, state.Unordered, state.OrderUnknown = fs.Written, fs.Unordered, p.OrderUnknown()
	if fs.Written > 0 {
		state.Note = join(state.Note, fmt.Sprintf("%d writes of other clients replayed where the service ran them", fs.Written))
	}
	if fs.Unordered > 0 {
		state.Note = join(state.Note, fmt.Sprintf("%d of them in an order not known against a proxied request naming the same key", fs.Unordered))
	}
	if fs.Absorbed > 0 {
		state.Note = join(state.Note, fmt.Sprintf("%d writes of other clients before the first touch of their keys, in the captures", fs.Absorbed))
	}
	if fs.Blocking > 0 {
		state.Note = join(state.Note, fmt.Sprintf("%d blocking commands of other clients not replayed (what they took is not in the feed)", fs.Blocking))
	}
	if ended != "" {
		state.Note = join(state.Note, "the watch of other clients' writes ended early: "+ended)
	}
}
