// Package replay starts a build, drives a recording's events through it
// as they were recorded, under a virtual clock, and returns a trace: per
// step, the replies, the normalized output and the outcome. It owns the
// build process, its port and its clock; no process outlives a replay.
package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kavach-dev/kavach"
)

// Options configure a replay. The zero value of every optional field is
// documented beside it.
type Options struct {
	Codec      kavach.Codec      // frames replies; required
	Classifier kavach.Classifier // classifies replies; required
	// Normalizer gives the output compared; nil compares raw bytes.
	Normalizer kavach.Normalizer
	Launcher   kavach.Launcher // starts the build; required
	// StepTimeout bounds the wait for each reply; past it the step hangs.
	// Zero means 5 s.
	StepTimeout time.Duration
	// Start is the virtual time of offset 0: the recording's start.
	Start time.Time
	// Shift moves the virtual clock at and after a step (clock variants).
	// Nil: no shift.
	Shift func(step int) time.Duration
	// Prepare rewrites a request before it is sent (putting secrets back,
	// say). Nil: requests are sent as recorded.
	Prepare func(request []byte) []byte
	// RealTime replays without faking the clock even when the build could
	// be faked. The trace says so.
	RealTime bool
	// Logger gets a line per problem. Nil: discard.
	Logger *slog.Logger
}

// Trace is what one replay of a build produced.
type Trace struct {
	Build kavach.Launch `json:"build"`
	// Clock is "virtual" (libfaketime), or "real: REASON" when the build
	// could not be faked and was replayed in real time, gaps compressed.
	Clock string       `json:"clock"`
	Steps []StepResult `json:"steps"`
	// Stopped says why the replay ended before the last step, if it did:
	// a hang, or the build exiting.
	Stopped string        `json:"stopped,omitempty"`
	Exit    *kavach.Exit  `json:"exit,omitempty"` // set when the build exited during the replay
	Wall    time.Duration `json:"wall_ns"`
	// Version is what the build reports of itself ("redis 7.0.15").
	Version string `json:"version,omitempty"`
}

// StepResult is one step of a trace.
type StepResult struct {
	N       int            `json:"step"`
	Conn    uint64         `json:"conn"`
	Virtual time.Time      `json:"virtual_time"`
	Ran     bool           `json:"ran"` // false: the replay stopped before this step
	Outcome kavach.Outcome `json:"outcome"`
	// Responses are the raw replies, in arrival order.
	Responses [][]byte `json:"responses"`
	// Output is the normalized replies, what comparisons use.
	Output []any `json:"output"`
	// Request is the request as sent (before Prepare).
	Request []byte `json:"-"`
}

// Run replays events against the build described by launch. It returns
// an error only when the replay could not happen (bad options, a build
// that does not start); a crash or hang during the replay is an outcome
// in the trace.
func Run(ctx context.Context, launch kavach.Launch, events []kavach.Event, opts Options) (*Trace, error) {
	if opts.Codec == nil || opts.Classifier == nil || opts.Launcher == nil {
		return nil, errors.New("replay: Codec, Classifier and Launcher are required")
	}
	if opts.StepTimeout == 0 {
		opts.StepTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	began := time.Now()
	tr := &Trace{Build: launch, Clock: "virtual"}

	var clock *Clock
	fakeable, why := Fakeable(launch.Path)
	if opts.RealTime {
		fakeable, why = false, "asked for real time"
	}
	if fakeable {
		dir, err := os.MkdirTemp(clockDir(), "kavach-clock-")
		if err != nil {
			return nil, fmt.Errorf("replay: clock directory: %w", err)
		}
		defer os.RemoveAll(dir)
		if clock, err = NewClock(dir, opts.Start); err != nil {
			return nil, err
		}
		launch.Env = append(append([]string(nil), launch.Env...), clock.Env()...)
	} else {
		tr.Clock = "real: " + why
	}

	proc, err := opts.Launcher.Start(launch)
	if err != nil {
		var se *kavach.StartError
		// No answer at all under the fake clock: the known deadlock.
		if clock != nil && errors.As(err, &se) && strings.Contains(se.Reason, "never became ready") && !strings.Contains(se.Reason, "answered") {
			return nil, fmt.Errorf("%w\nthe build did not become ready under libfaketime: a build linked with the system's jemalloc deadlocks there (DESIGN §6); build it with MALLOC=libc", err)
		}
		return nil, err
	}
	defer func() {
		proc.Stop()
		if p, ok := proc.(interface{ Pid() int }); ok {
			cleanShm(p.Pid())
		}
	}()

	tr.Version = opts.Launcher.Version(proc.Addr())
	r := &runner{opts: opts, proc: proc, clock: clock, tr: tr, conns: map[uint64]*conn{}}
	defer r.closeAll()
	r.run(ctx, events)
	if e := proc.Exited(); e != nil && tr.Exit == nil {
		tr.Exit = e
	}
	tr.Wall = time.Since(began)
	return tr, nil
}

// runner drives one replay.
type runner struct {
	opts  Options
	proc  kavach.Process
	clock *Clock
	tr    *Trace
	conns map[uint64]*conn
	last  map[uint64]int // conn -> index of its latest step
	reqs  [][]byte       // per step, the request as recorded
	stop  bool
}

// conn is one client connection to the build, with a reader that frames
// replies onto a queue.
type conn struct {
	id      uint64
	nc      net.Conn
	mu      sync.Mutex
	frames  [][]byte
	err     error // set when the reader ended
	ready   chan struct{}
	pending []waiting // steps waiting for replies, oldest first
}

type waiting struct {
	step int // index into trace steps
	left int
}

func (r *runner) run(ctx context.Context, events []kavach.Event) {
	steps := kavach.Steps(events, r.opts.Codec)
	stepOf := map[uint64]int{} // request seq -> index
	r.tr.Steps = make([]StepResult, len(steps))
	for i, s := range steps {
		stepOf[s.Request.Seq] = i
		r.tr.Steps[i] = StepResult{N: s.N, Conn: s.Conn(), Responses: [][]byte{}, Output: []any{}, Request: s.Request.Data}
		r.reqs = append(r.reqs, s.Request.Data)
	}
	defer r.normalize()
	r.last = map[uint64]int{}
	for _, ev := range events {
		if r.stop {
			break
		}
		if ctx.Err() != nil {
			r.tr.Stopped = "interrupted: " + context.Cause(ctx).Error()
			return
		}
		switch ev.Dir {
		case kavach.Open:
			r.dial(ev.Conn)
		case kavach.Request:
			if e := r.proc.Exited(); e != nil {
				// The build died with nothing waiting on it (or before we saw it).
				r.crashed(r.dial(ev.Conn), "the build is gone")
				r.stop = true
				break
			}
			r.send(ev, stepOf[ev.Seq])
		case kavach.Response:
			if c := r.conns[ev.Conn]; c != nil {
				r.await(c, 1)
			}
		case kavach.Close:
			c := r.conns[ev.Conn]
			if c == nil {
				continue
			}
			if string(ev.Data) == "server" {
				// The recording saw the service close here: take what the
				// build answers for the steps still waiting, or its close.
				// The connection stays open if the build keeps it: a fixed
				// build may answer where the old one hung up, and a variant
				// may send more on it.
				r.await(c, -1)
				continue
			}
			if c.nc != nil {
				c.nc.Close()
			}
		}
	}
	// Steps still waiting (the recorded failure, often) get their answer,
	// their close, or their timeout.
	for _, c := range r.conns {
		if !r.stop {
			r.await(c, -1)
		}
	}
	for i := range r.tr.Steps {
		s := &r.tr.Steps[i]
		if s.Ran && s.Outcome.Kind == "" {
			r.finish(s)
		}
	}
}

func (r *runner) dial(id uint64) *conn {
	if c := r.conns[id]; c != nil {
		return c
	}
	c := &conn{id: id, ready: make(chan struct{}, 1)}
	r.conns[id] = c
	nc, err := net.DialTimeout("tcp", r.proc.Addr(), r.opts.StepTimeout)
	if err != nil {
		c.err = err
		return c
	}
	c.nc = nc
	go c.read(r.opts.Codec)
	return c
}

// read frames replies until the connection ends.
func (c *conn) read(codec kavach.Codec) {
	buf := make([]byte, 64<<10)
	var data []byte
	raw := false
	for {
		n, err := c.nc.Read(buf)
		data = append(data, buf[:n]...)
		for len(data) > 0 {
			m, serr := codec.SplitResponse(data)
			if raw || serr != nil {
				raw, m = true, len(data)
			}
			if m == 0 {
				break
			}
			c.push(append([]byte(nil), data[:m]...), nil)
			data = data[m:]
		}
		if err != nil {
			c.push(nil, err)
			return
		}
	}
}

func (c *conn) push(frame []byte, err error) {
	c.mu.Lock()
	if err != nil {
		c.err = err
	} else {
		c.frames = append(c.frames, frame)
	}
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

// next returns the next reply, or the reason there is none: the
// connection closed (errClosed) or the timeout passed (errTimeout).
func (c *conn) next(timeout time.Duration) ([]byte, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		if len(c.frames) > 0 {
			f := c.frames[0]
			c.frames = c.frames[1:]
			c.mu.Unlock()
			return f, nil
		}
		err := c.err
		c.mu.Unlock()
		if err != nil || c.nc == nil {
			return nil, errClosed
		}
		select {
		case <-c.ready:
		case <-deadline.C:
			return nil, errTimeout
		}
	}
}

var (
	errClosed  = errors.New("connection closed")
	errTimeout = errors.New("timeout")
)

func (r *runner) send(ev kavach.Event, i int) {
	s := &r.tr.Steps[i]
	c := r.dial(ev.Conn)
	virtual := r.opts.Start.Add(ev.Offset)
	if r.opts.Shift != nil {
		virtual = virtual.Add(r.opts.Shift(s.N))
	}
	s.Virtual, s.Ran = virtual.UTC(), true
	r.last[ev.Conn] = i
	if r.clock != nil {
		from := r.clock.Now()
		if err := r.clock.Set(virtual); err != nil {
			r.opts.Logger.Error("set clock", "err", err)
		}
		if st, ok := r.opts.Codec.(kavach.Settler); ok {
			if d := st.Settle(from, r.clock.Now()); d > 0 {
				time.Sleep(d)
			}
		}
	}
	data := ev.Data
	if r.opts.Prepare != nil && ev.Flags&kavach.ParseError == 0 {
		data = r.opts.Prepare(data)
	}
	replies := 1
	if ev.Flags&kavach.ParseError == 0 {
		replies = r.opts.Codec.Replies(ev.Data)
	}
	if replies > 0 {
		c.pending = append(c.pending, waiting{step: i, left: replies})
	}
	if c.nc == nil {
		r.crashed(c, "could not connect: "+c.err.Error())
		return
	}
	c.nc.SetWriteDeadline(time.Now().Add(r.opts.StepTimeout))
	if _, err := c.nc.Write(data); err != nil {
		r.crashed(c, "write failed: "+err.Error())
	}
}

// await takes n replies on c (n < 0: until no step on c is waiting),
// attaching each to its step the way kavach.Steps does.
func (r *runner) await(c *conn, n int) {
	for n != 0 && !r.stop {
		if n < 0 && len(c.pending) == 0 {
			return
		}
		frame, err := c.next(r.opts.StepTimeout)
		switch err {
		case errClosed:
			r.crashed(c, "connection closed by the build")
			return
		case errTimeout:
			if len(c.pending) == 0 {
				return // the recording saw a reply (a push) the build did not send
			}
			s := &r.tr.Steps[c.pending[0].step]
			s.Outcome = kavach.Outcome{Kind: kavach.Hang, Detail: fmt.Sprintf("no reply within %s", r.opts.StepTimeout)}
			r.tr.Stopped = fmt.Sprintf("step %d hung: no reply within %s", s.N, r.opts.StepTimeout)
			r.stop = true
			return
		}
		n--
		if len(c.pending) == 0 || r.opts.Codec.IsPush(frame) {
			if i, ok := r.last[c.id]; ok {
				r.addReply(&r.tr.Steps[i], frame)
			}
			continue
		}
		w := &c.pending[0]
		r.addReply(&r.tr.Steps[w.step], frame)
		if w.left--; w.left == 0 {
			c.pending = c.pending[1:]
			r.finish(&r.tr.Steps[w.step])
		}
	}
}

func (r *runner) addReply(s *StepResult, frame []byte) {
	s.Responses = append(s.Responses, frame)
}

// finish classifies a step that got its replies.
func (r *runner) finish(s *StepResult) {
	if s.Outcome.Kind == "" {
		s.Outcome = r.opts.Classifier.Classify(r.reqs[s.N-1], s.Responses)
	}
}

// normalize fills in every step's Output.
func (r *runner) normalize() {
	for i := range r.tr.Steps {
		s := &r.tr.Steps[i]
		for _, resp := range s.Responses {
			s.Output = append(s.Output, Normalize(r.opts.Normalizer, r.reqs[i], resp))
		}
	}
}

// Normalize is n's view of a response, or its raw bytes as a string when
// n is nil.
func Normalize(n kavach.Normalizer, request, response []byte) any {
	if n == nil {
		return string(response)
	}
	return n.Normalize(request, response)
}

// crashed marks every step waiting on c as crashed. If the build process
// is gone, the replay stops there, with its exit as evidence.
func (r *runner) crashed(c *conn, why string) {
	exit := r.exitSoon()
	detail := why
	if exit != nil {
		detail = why + "; the build exited: " + exit.Evidence()
	}
	conns := []*conn{c}
	if exit != nil {
		// The process is gone: every step waiting anywhere crashed.
		conns = conns[:0]
		for _, other := range r.conns {
			conns = append(conns, other)
		}
	}
	for _, c := range conns {
		for _, w := range c.pending {
			s := &r.tr.Steps[w.step]
			if s.Outcome.Kind == "" {
				s.Outcome = kavach.Outcome{Kind: kavach.Crash, Detail: detail}
			}
		}
		c.pending = nil
	}
	if exit != nil {
		r.tr.Exit = exit
		r.tr.Stopped = "the build exited: " + exit.String()
		r.stop = true
	}
}

// exitSoon waits briefly for the build to be reaped, and returns its exit
// evidence if it has exited.
func (r *runner) exitSoon() *kavach.Exit {
	select {
	case <-r.proc.Done():
	case <-time.After(200 * time.Millisecond):
	}
	return r.proc.Exited()
}

func (r *runner) closeAll() {
	for _, c := range r.conns {
		if c.nc != nil {
			c.nc.Close()
		}
	}
}
