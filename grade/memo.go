package grade

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/replay"
)

// Memo remembers the old build's replays of variants across the diffs of
// one process, so that grading several new builds against one old build
// and one fixture (the example harness's candidates, a test's correct and
// wrong fixes) replays each variant on the old build once: about three
// replays in five of a diff are the old build's (every variant runs on
// it; only the kept ones run on the new build).
//
// A replay is reused only when all it depends on is the same, each part
// observed rather than assumed: the launch (path, arguments, environment,
// data and state directories); the build's file (device, inode, size,
// modification time); the fixture's header, from which the integration's
// settings are made (the key holds the integration's type, not its
// settings); the events; every request as sent (Options.Prepare
// applied); the clock's shift at every step (Options.Shift called); the
// step timeout, the start time and the clock mode. A replay that
// fingerprints state, or starts from a fixture's state, is not remembered;
// nor is one whose context ended, nor one of a build that is not an ELF
// executable (a wrapper script's file says nothing of the build it runs).
// A library the build loads that changes while the Memo lives is not
// seen: a Memo is for builds that do not change while it lives
// (docs/diff.md, "Grading several fixes in one process").
type Memo struct {
	mu     sync.Mutex
	traces map[memoKey]*replay.Trace
	steps  int // the traces' steps, for maxMemoSteps
}

type memoKey [sha256.Size]byte

// A Memo holds at most maxMemoTraces traces of maxMemoSteps steps in
// all: when full, it starts again empty (a variant of a long recording's
// window is a thousand steps and more).
const (
	maxMemoTraces = 4096
	maxMemoSteps  = 200_000
)

// NewMemo returns an empty Memo.
func NewMemo() *Memo { return &Memo{traces: map[memoKey]*replay.Trace{}} }

// replay is run (nil: runRetry) of events on the old build l,
// remembered: a replay of the same inputs made earlier through m is
// returned instead (true), without starting the build; run's trace is
// a whole replay's (from a checkpoint, spliced), so it is remembered as
// one. A nil m remembers nothing. The trace returned is shared: its
// reader must not change it.
func (m *Memo) replay(ctx context.Context, scope string, l kavach.Launch, events []kavach.Event, ropts replay.Options, run replayFunc) (*replay.Trace, bool, error) {
	if run == nil {
		run = runRetry
	}
	var key memoKey
	ok := false
	if m != nil {
		key, ok = replayKey(scope, l, events, ropts)
	}
	if !ok {
		tr, err := run(ctx, l, events, ropts)
		return tr, false, err
	}
	m.mu.Lock()
	tr := m.traces[key]
	m.mu.Unlock()
	if tr != nil {
		return tr, true, nil
	}
	tr, err := run(ctx, l, events, ropts)
	if err != nil || ctx.Err() != nil {
		return tr, false, err
	}
	m.mu.Lock()
	if len(m.traces) >= maxMemoTraces || m.steps+len(tr.Steps) > maxMemoSteps {
		clear(m.traces)
		m.steps = 0
	}
	m.traces[key] = tr
	m.steps += len(tr.Steps)
	m.mu.Unlock()
	return tr, false, nil
}

// replayKey is the digest of all a replay of events on l with ropts
// depends on, within scope (Options.memoScope); false when it is not to
// be remembered (Memo).
func replayKey(scope string, l kavach.Launch, events []kavach.Event, ropts replay.Options) (memoKey, bool) {
	if ropts.Inputs != nil || ropts.Seed != nil || ropts.SaveTo != nil {
		return memoKey{}, false
	}
	fi, err := os.Stat(l.Path)
	if err != nil {
		return memoKey{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !isELF(l.Path) {
		return memoKey{}, false
	}
	h := sha256.New()
	str := func(s string) { num(h, uint64(len(s))); h.Write([]byte(s)) }
	strs := func(ss []string) {
		num(h, uint64(len(ss)))
		for _, s := range ss {
			str(s)
		}
	}
	str(scope)
	str(l.Path)
	strs(l.Args)
	strs(l.Env)
	str(l.Data)
	str(l.State)
	for _, n := range []uint64{st.Dev, st.Ino, uint64(fi.Size()), uint64(fi.ModTime().UnixNano())} {
		num(h, n)
	}
	str(fmt.Sprintf("%T", ropts.Integration))
	num(h, uint64(ropts.StepTimeout))
	num(h, uint64(ropts.Start.UnixNano()))
	for _, b := range []bool{ropts.RealTime, ropts.Perturb} {
		if b {
			num(h, 1)
		} else {
			num(h, 0)
		}
	}
	num(h, uint64(len(events)))
	for _, e := range events {
		num(h, e.Seq)
		num(h, e.Conn)
		num(h, uint64(e.Dir))
		num(h, uint64(e.Flags))
		num(h, uint64(e.Offset))
		data := e.Data
		if e.Dir == kavach.Request && ropts.Prepare != nil {
			data = ropts.Prepare(data)
		}
		num(h, uint64(len(data)))
		h.Write(data)
	}
	if ropts.Shift != nil {
		for i := range len(events) + 1 {
			num(h, uint64(ropts.Shift(i)))
		}
	}
	var k memoKey
	h.Sum(k[:0])
	return k, true
}

// headerDigest is the SHA-256 of a fixture's header, as JSON.
func headerDigest(h fixtures.Header) string {
	b, err := json.Marshal(h)
	if err != nil {
		b = fmt.Appendf(nil, "%#v", h)
	}
	sum := sha256.Sum256(b)
	return string(sum[:])
}

// isELF reports whether the file at path is an ELF executable: a script
// (a wrapper) says nothing by its own file of the build it runs, so its
// replays are not remembered.
func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == "\x7fELF"
}

func num(h hash.Hash, n uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], n)
	h.Write(b[:])
}
