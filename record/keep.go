package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
)

// Keep configures an always-on recording (docs/record.md, "Always on"):
// the traffic goes to rolling segments on disk, the oldest dropped, and
// each failure the proxy detects, and each cut asked for, writes the kept
// stretch as a fixture of its own into Session.Out, a directory.
type Keep struct {
	// Duration is how much traffic before a failure a cut holds. Zero:
	// no bound by time (Bytes is then required).
	Duration time.Duration
	// Bytes bounds the disk the segments take. It wins over Duration: a
	// cut then holds what fits. Zero: no bound by bytes.
	Bytes int64
	// After is how long the recording goes on after a failure before it
	// is cut, so that the cut holds what followed. Zero: one second.
	After time.Duration
	// Cut, when set, asks for a cut of the kept stretch up to now each
	// time a value arrives (SIGUSR1, `kavach record --cut`).
	Cut <-chan struct{}
}

// keepTick is how often the keeper looks at its segments, failures and
// requests for cuts.
const keepTick = 20 * time.Millisecond

// segment is one file of rolling traffic and what the proxy held at its
// start: what a cut starting in it needs from before it.
type segment struct {
	path  string
	file  *os.File
	count *countWriter
	w     *fixtures.Writer
	at    boundary
	end   time.Duration // offset of its end; zero while it is written
	size  int64         // bytes on disk, once closed
}

// boundary is the proxy's bookkeeping at a segment's start.
type boundary struct {
	at    time.Duration  // offset from the recording's start
	steps int            // requests written before it
	open  map[uint64]int // connections open, each with the replies it still waits for
}

// cutReq is a cut to write: of a failure once the recording has gone on
// for Keep.After past it, or asked for (failure nil).
type cutReq struct {
	at      time.Duration // offset of the failure, or of the request
	due     time.Time
	failure *kavach.Failure
}

// keeper owns the segments of an always-on recording and writes its cuts.
// One goroutine (run) rotates, drops and cuts; finish stops it.
type keeper struct {
	opts   Keep
	dir    string // the cuts directory
	segDir string // the segments, under dir
	header fixtures.Header
	codec  kavach.Integration
	p      *Proxy
	cur    *segment
	segs   []*segment // closed, oldest first
	segLen time.Duration
	segMax int64
	made   int // segments made, which names them
	// lost is the end of the last segment that could not be written
	// (a full disk), and lostErr why: a failure before it cannot be cut.
	lost    time.Duration
	lostErr error
	diskErr error                         // the last error writing a segment
	create  func(string) (cutFile, error) // createFile; a test plants a full disk

	stop chan struct{}
	done chan struct{}
	full chan struct{} // a segment passed segMax: rotate now, not at the next tick

	mu   sync.Mutex
	cuts []string // cuts written, in order
	errs []error  // cuts that failed
}

// newKeeper makes the cuts directory (and its segments' directory) and
// the first segment, which the proxy is to write to.
func newKeeper(dir string, k Keep, h fixtures.Header, codec kavach.Integration) (*keeper, error) {
	if k.Duration <= 0 && k.Bytes <= 0 {
		return nil, errors.New("record: --keep or --keep-bytes must be more than zero")
	}
	if k.After <= 0 {
		k.After = time.Second
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("record: cuts directory: %w", err)
	}
	segDir, err := os.MkdirTemp(dir, ".segments-")
	if err != nil {
		return nil, fmt.Errorf("record: cuts directory: %w", err)
	}
	kp := &keeper{opts: k, dir: dir, segDir: segDir, header: h, codec: codec, create: createFile,
		stop: make(chan struct{}), done: make(chan struct{}), full: make(chan struct{}, 1)}
	// Segments short against the bounds: a cut's stretch is trimmed to
	// the event, the disk is bounded to a segment.
	kp.segLen = k.Duration / 4
	if kp.segLen <= 0 || kp.segLen > time.Minute {
		kp.segLen = time.Minute
	}
	kp.segMax = k.Bytes / 8
	if kp.cur, err = kp.newSegment(); err != nil {
		os.RemoveAll(segDir)
		return nil, err
	}
	return kp, nil
}

// writer is the fixture the proxy starts with.
func (k *keeper) writer() *fixtures.Writer { return k.cur.w }

// start begins rotating and cutting for p.
func (k *keeper) start(p *Proxy) {
	k.p = p
	go k.run()
}

func (k *keeper) newSegment() (*segment, error) {
	k.made++
	path := filepath.Join(k.segDir, fmt.Sprintf("%08d%s", k.made, fixtures.Ext))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("record: segment: %w", err)
	}
	s := &segment{path: path, file: f, count: &countWriter{f: f, limit: k.segMax, full: k.full}}
	if s.w, err = fixtures.NewWriter(s.count, path, k.header); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return s, nil
}

// closeSegment finishes s's file; a segment that could not be written
// whole is dropped (a cut never reads half of one).
func (k *keeper) closeSegment(s *segment, end time.Duration) {
	err := errors.Join(s.w.Close(fixtures.End{Duration: end, Reason: "segment"}), s.file.Close())
	s.end, s.size = end, s.count.n.Load()
	if err != nil {
		// The kept stretch has a hole: it starts again after it.
		k.p.log.Error("keep: segment", "err", err)
		os.Remove(s.path)
		for _, old := range k.segs {
			os.Remove(old.path)
		}
		k.segs, k.lost, k.lostErr, k.diskErr = nil, end, err, err
		return
	}
	k.segs = append(k.segs, s)
}

// rotate starts a new segment and closes the current one. With clear,
// the proxy's failure is cleared at the boundary, so that the next one is
// a failure of its own. A segment that cannot be made (a full disk) keeps
// the proxy writing to the current one.
func (k *keeper) rotate(clear bool) {
	next, err := k.newSegment()
	if err != nil {
		k.p.log.Error("keep: segment", "err", err)
		k.diskErr = err
		if clear {
			k.p.boundary(nil, true)
		}
		return
	}
	next.at = k.p.boundary(next.w, clear)
	old := k.cur
	k.cur = next
	k.closeSegment(old, next.at.at)
}

// drop removes the oldest segments past the bounds: older than Duration
// before the earliest failure waiting for its cut (or now), and past
// Bytes with the segment being written.
func (k *keeper) drop(now time.Duration, pending []cutReq) {
	keepFrom := now
	for _, c := range pending {
		keepFrom = min(keepFrom, c.at)
	}
	keepFrom -= k.opts.Duration
	total := k.cur.count.n.Load()
	for _, s := range k.segs {
		total += s.size
	}
	for len(k.segs) > 0 {
		s := k.segs[0]
		byTime := k.opts.Duration > 0 && s.end < keepFrom
		// Room for the segment being written and for what it may pass
		// its share by before it is rotated (a block).
		byBytes := k.opts.Bytes > 0 && total > k.opts.Bytes-2*k.segMax
		if !byTime && !byBytes {
			return
		}
		os.Remove(s.path)
		total -= s.size
		k.segs = k.segs[1:]
	}
}

// run rotates segments, drops old ones and writes cuts until stop.
func (k *keeper) run() {
	defer close(k.done)
	t := time.NewTicker(keepTick)
	defer t.Stop()
	var pending []cutReq
	for {
		select {
		case <-k.stop:
			k.finishPending(pending)
			return
		case <-k.opts.Cut:
			pending = append(pending, cutReq{at: time.Since(k.p.start), due: time.Now()})
		case <-t.C:
		case <-k.full:
		}
		pending = addFailures(pending, k.p.takeFailures(), time.Now().Add(k.opts.After))
		now := time.Since(k.p.start)
		if len(pending) > 0 && !time.Now().Before(pending[0].due) {
			k.rotate(pending[0].failure != nil)
			k.cut(pending[0])
			pending = pending[1:]
			continue
		}
		if now-k.cur.at.at >= k.segLen || k.segMax > 0 && k.cur.count.n.Load() >= k.segMax {
			k.rotate(false)
		}
		k.drop(now, pending)
	}
}

// addFailures adds a cut for each failure of fs; a failure of a step
// already waiting for its cut (a crash the build's exit adds to) replaces
// the one waiting.
func addFailures(pending []cutReq, fs []keptFailure, due time.Time) []cutReq {
next:
	for _, f := range fs {
		for i := range pending {
			if g := pending[i].failure; g != nil && g.Step == f.f.Step {
				pending[i].failure = &f.f
				continue next
			}
		}
		pending = append(pending, cutReq{at: f.at, due: due, failure: &f.f})
	}
	return pending
}

// finishPending writes the cuts still waiting when the recording ends
// (the service crashed, or Ctrl-C): the stretch after them is all there is.
func (k *keeper) finishPending(pending []cutReq) {
	pending = addFailures(pending, k.p.takeFailures(), time.Now())
	k.closeSegment(k.cur, time.Since(k.p.start))
	k.cur = nil
	for _, c := range pending {
		k.cut(c)
	}
}

// finish stops the keeper once the proxy is closed, writes the cuts
// still waiting and removes the segments. It returns the cuts written and
// the error of those that could not be.
func (k *keeper) finish() ([]string, error) {
	close(k.stop)
	<-k.done
	os.RemoveAll(k.segDir)
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cuts, errors.Join(k.errs...)
}

// abandon removes the segments of a recording that did not start.
func (k *keeper) abandon() {
	k.cur.w.Close(fixtures.End{Reason: "did not start"})
	k.cur.file.Close()
	os.RemoveAll(k.segDir)
}

// cut writes the kept stretch for c into the cuts directory and logs
// what it did; a cut that fails is logged and counted, the recording
// goes on.
func (k *keeper) cut(c cutReq) {
	from := time.Duration(0)
	if k.opts.Duration > 0 {
		from = c.at - k.opts.Duration
	}
	start := k.header.Start.Add(c.at)
	var path string
	err := fmt.Errorf("cut %s: the stretch up to it could not be kept: %w", cutName(start), k.lostErr)
	if k.lostErr == nil || c.at >= k.lost {
		path, err = writeCut(cutSpec{
			dir: k.dir, name: cutName(start), segs: k.segs, from: from, failure: c.failure,
			header: k.header, codec: k.codec, create: k.create,
		})
	}
	if errors.Is(err, errNothingKept) && k.diskErr != nil {
		err = fmt.Errorf("%w (%v)", err, k.diskErr)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		k.errs = append(k.errs, err)
		k.p.log.Error("keep: cut", "err", err)
		return
	}
	k.cuts = append(k.cuts, path)
	k.p.log.Info("keep: cut written", "fixture", path)
}

// cutName is a cut's file name: the time of its failure (or request), in
// UTC, to the millisecond, which sorts in time order.
func cutName(t time.Time) string {
	return t.UTC().Format("20060102T150405.000Z") + fixtures.Ext
}

// sortedConns is the connections of open in order.
func sortedConns(open map[uint64]int) []uint64 {
	ids := make([]uint64, 0, len(open))
	for id := range open {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// forgetter is a kavach.Toucher that can forget the keys it captured, so
// that each segment of an always-on recording holds the keys it needs.
type forgetter interface{ Forget() }

// keptFailure is a failure the proxy detected, for the keeper to cut.
type keptFailure struct {
	f  kavach.Failure
	at time.Duration
}

// takeFailures returns the failures detected since the last call.
func (p *Proxy) takeFailures() []keptFailure {
	p.mu.Lock()
	defer p.mu.Unlock()
	fs := p.failures
	p.failures = nil
	return fs
}

// boundary makes w, when not nil, the fixture the proxy writes to from
// now on, and with clear forgets the failure, so that the next one is
// detected as a failure of its own. It returns what the proxy holds at
// that moment: a segment's start.
func (p *Proxy) boundary(w *fixtures.Writer, clear bool) boundary {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w != nil {
		p.opts.Fixture = w
	}
	if clear {
		p.failure = nil
	}
	if f, ok := p.opts.Toucher.(forgetter); ok && w != nil {
		f.Forget() // the new segment captures each key at its first touch in it
	}
	b := boundary{at: time.Since(p.start), steps: p.steps, open: make(map[uint64]int, len(p.conns))}
	for id, c := range p.conns {
		n := 0
		for _, s := range c.pending {
			n += s.left
		}
		b.open[id] = n
	}
	return b
}
