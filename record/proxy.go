package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/launch"
)

// Options configure a recording proxy. The zero value of every optional
// field is documented beside it.
type Options struct {
	// Codec frames the traffic into messages (with its Resync and
	// MinFrameLen abilities) and classifies replies for FailOn. Required.
	Codec kavach.Integration
	// Redactor removes secrets from requests before they are written, and
	// from responses and bytes the codec could not frame as far as it has
	// the functions for them. Nil: nothing is redacted.
	Redactor *kavach.Redaction
	// FailOn, when it is an error oracle, makes the first reply that it
	// fires on the incident's failure. Nil: only crashes are recorded as
	// the failure.
	FailOn *kavach.Oracle
	// Listen is the address to accept clients on. "" means 127.0.0.1:0.
	Listen string
	// Upstream is the service's address. Required.
	Upstream string
	// Fixture receives the events. Required; the proxy does not close it.
	Fixture *fixtures.Writer
	// Logger gets one line per connection and per problem. Nil: discard.
	Logger *slog.Logger
	// Toucher, when set, is told every request before it is forwarded
	// (kavach.StateTaking): the keys it captures are written to the
	// fixture before the request's event. Nil: none.
	Toucher kavach.Toucher
	// MaxFrame bounds the bytes buffered while waiting for a whole
	// message; past it the direction is recorded raw. Zero: 64 MiB less
	// the event header.
	MaxFrame int
}

// Proxy is a running recording proxy. It owns its listener, its
// connections and their goroutines; Close stops them all.
type Proxy struct {
	opts  Options
	ab    kavach.Abilities // opts.Codec's
	ln    net.Listener
	start time.Time
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex // orders events, steps and the failure
	// arrivals reads, records and forwards every connection's requests,
	// in the order they reached the proxy (order.go).
	arrivals *arrivals
	conns    map[uint64]*proxyConn
	nextConn uint64
	steps    int // requests written so far
	failure  *kavach.Failure
	err      error // first fixture write error
	stats    Stats
	// captured counts the keys the Toucher captured; touchErr is its
	// first error (the state is incomplete from there).
	captured      int
	capturedBytes int64
	touchErr      error
	// watch, when set, holds events for the service's feed (foreign.go).
	watch *watchState
	// keep: an always-on recording (keep.go); failures are those its
	// keeper has not taken yet.
	keep     bool
	failures []keptFailure
}

// waitStep is a request still waiting for replies.
type waitStep struct {
	step    int
	left    int
	request []byte
	// orig is the request as the client sent it, kept when the replies to
	// it may hold a secret that only the request tells (see kavach.Redaction.ReplyMayHoldSecret).
	orig []byte
	// raw: the request was bytes the codec could not frame; its replies
	// are redacted by pattern too (a service may echo them).
	raw bool
}

// Stats count what a proxy recorded.
type Stats struct {
	Conns     uint64 // connections opened
	Closed    uint64 // connections whose close is recorded
	Requests  uint64
	Responses uint64
	Unparsed  uint64 // events marked ParseError
}

// Start listens and starts proxying. Offsets in the fixture are measured
// from start, which must be the Header.Start the fixture was created with.
func Start(opts Options, start time.Time) (*Proxy, error) {
	if opts.Codec == nil || opts.Fixture == nil || opts.Upstream == "" {
		return nil, errors.New("record: Codec, Fixture and Upstream are required")
	}
	if opts.FailOn != nil && opts.FailOn.Kind != kavach.Error {
		return nil, fmt.Errorf("record: --fail-on takes error or error:CLASS, got %s", opts.FailOn)
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.MaxFrame == 0 {
		opts.MaxFrame = fixtures.MaxRecord - 64
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("record: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		opts: opts, ab: opts.Codec.Abilities(), ln: ln, start: start, log: log, ctx: ctx, cancel: cancel,
		conns: map[uint64]*proxyConn{},
	}
	if p.arrivals, err = newArrivals(p); err != nil {
		cancel()
		ln.Close()
		return nil, err
	}
	p.wg.Add(2)
	go p.arrivals.run()
	go p.accept()
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() net.Addr { return p.ln.Addr() }

// Failure returns the failure recorded so far, or nil.
func (p *Proxy) Failure() *kavach.Failure {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failure == nil || p.watch == nil {
		return p.failure
	}
	f := *p.failure
	f.Step = p.step(f.Step)
	return &f
}

// Stats returns what was recorded so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Idle waits until the close of every connection opened so far is
// recorded, or ctx ends; it reports whether they all were. A caller that
// knows its clients are gone calls it before Close, so that their closes
// are recorded as theirs and not as the proxy's.
func (p *Proxy) Idle(ctx context.Context) bool {
	for {
		if s := p.Stats(); s.Closed == s.Conns {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Err returns the first error writing the fixture, or nil.
func (p *Proxy) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Close stops accepting, closes every connection and waits for every
// goroutine of the proxy to end.
func (p *Proxy) Close() error {
	p.cancel()
	err := p.ln.Close()
	p.mu.Lock()
	ids := make([]uint64, 0, len(p.conns))
	for _, c := range p.conns {
		c.client.Close()
		c.server.Close()
		ids = append(ids, c.id)
	}
	p.mu.Unlock()
	for _, id := range ids {
		p.arrivals.stop(id)
	}
	p.arrivals.close()
	p.wg.Wait()
	p.endWatch()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// BuildDied records that the service's process ended: every step still
// waiting for a reply is unanswered, and the earliest is the failure.
// When no step is waiting, the latest step is blamed.
func (p *Proxy) BuildDied(exit *kavach.Exit) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f := p.failure; f != nil {
		if f.Oracle.Kind == kavach.Crash {
			// A connection saw the close first; add what the process left.
			g := *f
			g.Evidence += "; the build died: " + exit.Evidence()
			p.setFailure(g)
		}
		return
	}
	step := 0
	for _, c := range p.conns {
		if q := c.pending; len(q) > 0 && (step == 0 || q[0].step < step) {
			step = q[0].step
		}
	}
	evidence := "the build died while the step was waiting for its reply: " + exit.Evidence()
	if step == 0 {
		step = p.steps
		evidence = "the build died after the last step was answered: " + exit.Evidence()
	}
	if step == 0 {
		return // died before any request: nothing to blame
	}
	p.setFailure(kavach.Failure{Step: step, Oracle: kavach.Oracle{Kind: kavach.Crash}, Signature: "crash", Evidence: evidence})
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() == nil {
				p.log.Error("accept", "err", err)
			}
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(client)
		}()
	}
}

// proxyConn is one client connection and its upstream connection.
type proxyConn struct {
	id             uint64
	client, server net.Conn
	pending        []waitStep // requests waiting for replies; guarded by Proxy.mu
	fed            []*fedReq  // requests the watch's feed has not shown; guarded by Proxy.mu
}

func (p *Proxy) serve(client net.Conn) {
	server, err := launch.Dial(p.ctx, p.opts.Upstream)
	if err != nil {
		p.log.Error("dial upstream", "upstream", p.opts.Upstream, "err", err)
		// The client came and was turned away: recorded as a connection
		// opened and closed by the upstream (kavach.Close's "upstream"),
		// not dropped unseen. Recorded before the client is closed: a
		// client that stops the recording once it sees the close would
		// otherwise find nothing recorded.
		defer client.Close()
		p.mu.Lock()
		if p.ctx.Err() == nil {
			p.nextConn++
			p.stats.Conns++
			p.stats.Closed++
			p.event(kavach.Event{Conn: p.nextConn, Dir: kavach.Open})
			p.event(kavach.Event{Conn: p.nextConn, Dir: kavach.Close, Data: []byte("upstream")})
		}
		p.mu.Unlock()
		return
	}
	p.mu.Lock()
	if p.ctx.Err() != nil {
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.nextConn++
	c := &proxyConn{id: p.nextConn, client: client, server: server}
	p.conns[c.id] = c
	if p.watch != nil {
		p.watch.origins[server.LocalAddr().String()] = c
	}
	p.stats.Conns++
	p.event(kavach.Event{Conn: c.id, Dir: kavach.Open})
	p.mu.Unlock()
	p.log.Debug("open", "conn", c.id, "client", client.RemoteAddr())

	// One copier per direction. The first to end decides who closed: the
	// side it read EOF from, or the side it could not write to.
	closer := make(chan string, 2)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		closer <- whoClosed(p.arrivals.follow(c, server), "client", "server")
	}()
	go func() {
		defer wg.Done()
		closer <- whoClosed(p.copy(c, kavach.Response, client, server), "server", "client")
	}()
	// A copier that ended because the proxy closed the connection itself
	// (Close, on Ctrl-C) reports "proxy".
	who := <-closer
	if who == "client" {
		// Pass the half-close on: the service answers what it has, then closes.
		closeWrite(server)
	} else {
		// The service is gone; everything it sent has been forwarded.
		client.Close()
		server.Close()
		p.arrivals.stop(c.id)
	}
	wg.Wait()
	client.Close()
	server.Close()

	// A connection the service closed with a request unanswered is a
	// crash; for a service that closes connections on purpose
	// (kavach.Abilities.DeliberateCloses: Redis, on QUIT from a client
	// with CLIENT REPLY OFF, CLIENT KILL, a protocol error), only if the
	// service no longer serves. Observed by asking it (serviceUp),
	// outside the lock.
	p.mu.Lock()
	unanswered := who == "server" && p.failure == nil && len(c.pending) > 0
	p.mu.Unlock()
	up := unanswered && p.opts.Codec.Abilities().DeliberateCloses && p.serviceUp()

	p.mu.Lock()
	delete(p.conns, c.id)
	p.stats.Closed++
	p.event(kavach.Event{Conn: c.id, Dir: kavach.Close, Data: []byte(who)})
	switch {
	case !unanswered || p.failure != nil || len(c.pending) == 0:
	case up:
		p.log.Info("the service closed a connection with a request unanswered and still answers: not a crash",
			"conn", c.id, "step", c.pending[0].step)
	default:
		p.setFailure(kavach.Failure{Step: c.pending[0].step, Oracle: kavach.Oracle{Kind: kavach.Crash}, Signature: "crash",
			Evidence: "the service closed the connection before answering"})
	}
	p.mu.Unlock()
	p.log.Debug("close", "conn", c.id, "by", who)
}

// serviceUp reports whether the service still serves, within a second:
// it answers the integration's question about what it holds
// (kavach.Abilities.Held: Redis, INFO keyspace), or, for an integration
// without one, accepts a connection. A service that is crashing can
// still accept a connection (the kernel completes it from the listener's
// backlog while the process writes its crash report, seen beside
// stress-ng): it answers nothing.
func (p *Proxy) serviceUp() bool {
	ctx, cancel := context.WithTimeout(p.ctx, time.Second)
	defer cancel()
	if held := p.opts.Codec.Abilities().Held; held != nil {
		_, err := held(ctx, p.opts.Upstream)
		return err == nil
	}
	conn, err := launch.Dial(ctx, p.opts.Upstream)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

func whoClosed(end copyEnd, src, dst string) string {
	switch end {
	case proxyClosed:
		return "proxy"
	case srcEnded:
		return src
	}
	return dst
}

// copyEnd is why a copier ended.
type copyEnd int

const (
	srcEnded    copyEnd = iota // its source ended (EOF, reset)
	dstFailed                  // its destination could not be written
	proxyClosed                // the proxy closed the connection itself
)

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

// copy forwards src to dst until src ends or a write fails, and records
// the bytes as whole messages of direction dir (copier.take). It reports
// why it ended. Requests are not read this way but by the proxy's
// arrivals, in the order they reached the proxy (order.go).
func (p *Proxy) copy(c *proxyConn, dir kavach.Direction, dst io.Writer, src io.Reader) copyEnd {
	k := p.newCopier(c, dir, dst)
	buf := make([]byte, readSize)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if end, ok := k.take(buf[:n]); !ok {
				return end
			}
		}
		if rerr != nil {
			return k.end(rerr)
		}
	}
}

// readSize is how much a copier reads at once.
const readSize = 64 << 10

// copier is one direction of a connection: what it has read of a message
// not yet whole, and how its next bytes are taken.
type copier struct {
	p       *Proxy
	c       *proxyConn
	dir     kavach.Direction
	dst     io.Writer
	split   func([]byte) (int, error)
	pending []byte // bytes read but not yet a whole message
	batch   []message
	mode    rawMode
	rs      rawState
}

func (p *Proxy) newCopier(c *proxyConn, dir kavach.Direction, dst io.Writer) *copier {
	split := p.opts.Codec.SplitRequest
	if dir == kavach.Response {
		split = p.opts.Codec.SplitResponse
	}
	return &copier{p: p, c: c, dir: dir, dst: dst, split: split}
}

// take records the bytes of one read as whole messages and then forwards
// them: the messages of each read are written to the fixture before its
// bytes are forwarded, so a reply can never precede its request in the
// fixture. Bytes the codec cannot frame are forwarded unchanged and
// recorded raw, marked ParseError (with what looks like a secret in them
// redacted); framing starts again where the codec says the service goes
// on (kavach.Abilities.Resync), else the rest of the direction is raw, and
// so it is after a message over the size limit. It reports false, and
// why, when dst could not be written. chunk is not kept.
func (k *copier) take(chunk []byte) (copyEnd, bool) {
	p := k.p
	k.batch = k.batch[:0]
	switch k.mode {
	case rawRest:
		k.batch = append(k.batch, p.rawMessage(k.dir, &k.rs, chunk, true))
	case rawLine:
		// The unparsable line goes on: raw up to its end.
		i := bytes.IndexByte(chunk, '\n') + 1
		if i == 0 {
			k.batch = append(k.batch, p.rawMessage(k.dir, &k.rs, chunk, false))
			break
		}
		k.batch = append(k.batch, p.rawMessage(k.dir, &k.rs, chunk[:i], false))
		k.pending = append(k.pending[:0], chunk[i:]...)
		k.pending, k.mode, k.batch = p.frames(k.c.id, k.dir, k.split, k.pending, k.batch, &k.rs)
	default:
		k.pending = p.room(k.pending, len(chunk), k.dir)
		k.pending = append(k.pending, chunk...)
		k.pending, k.mode, k.batch = p.frames(k.c.id, k.dir, k.split, k.pending, k.batch, &k.rs)
	}
	p.record(k.c, k.dir, k.batch)
	k.pending = letGo(k.pending, k.batch)
	clear(k.batch) // nor keep them through the batch
	if _, err := k.dst.Write(chunk); err != nil {
		if errors.Is(err, net.ErrClosed) && p.ctx.Err() != nil {
			return proxyClosed, false
		}
		return dstFailed, false
	}
	return 0, true
}

// end records what is left when the source ended with err, and reports
// why the copy ended.
func (k *copier) end(err error) copyEnd {
	p := k.p
	if len(k.pending) > 0 {
		// The stream ended inside a message: keep what there was.
		p.record(k.c, k.dir, []message{p.rawMessage(k.dir, &k.rs, k.pending, k.mode == rawRest)})
	}
	if cap(k.pending) > largePending {
		// A large message cut short: its memory goes back now,
		// not whenever the runtime gets to it.
		k.pending = nil
		debug.FreeOSMemory()
	}
	if errors.Is(err, net.ErrClosed) && p.ctx.Err() != nil {
		return proxyClosed
	}
	return srcEnded
}

// room makes room in pending for more bytes of a message: for the whole
// message at once when the codec tells its length (kavach.Abilities.MinFrameLen), it
// is within the size limit, and an eighth of it has come, so that a large
// value is held in few copies. Before that, room for twice what has come:
// a length is a client's word, and a client that declares a large value
// and stalls costs the recorder what it sent, not what it declared.
func (p *Proxy) room(pending []byte, more int, dir kavach.Direction) []byte {
	if len(pending)+more <= cap(pending) || len(pending) == 0 {
		return pending
	}
	minLen := p.ab.MinFrameLen
	if minLen == nil {
		return pending
	}
	have := len(pending) + more
	if want := minLen(pending, dir == kavach.Request); want > have && want <= p.opts.MaxFrame {
		if want > trustDeclared*have {
			want = 2 * have
		}
		return slices.Grow(pending, want-len(pending))
	}
	return pending
}

// trustDeclared: the recorder makes room for a declared length once it
// has this fraction of it (1/trustDeclared).
const trustDeclared = 8

// largePending is the buffer a copier keeps between messages at most.
const largePending = 1 << 20

// letGo returns the bytes left over after batch was framed from a
// buffer and written. When batch held a large message, they are copied
// out (they are a slice of the same array) and the memory is given back
// at once, before the next large message is read: a connection keeps no
// large buffer, nor does the heap, between large messages.
func letGo(pending []byte, batch []message) []byte {
	if !framedLarge(batch) {
		return pending
	}
	pending = append([]byte(nil), pending...)
	clear(batch)
	debug.FreeOSMemory()
	return pending
}

// framedLarge reports whether a message of batch is larger than largePending.
func framedLarge(batch []message) bool {
	for _, m := range batch {
		if len(m.data) > largePending {
			return true
		}
	}
	return false
}

// message is one framed message of a read, with what can be worked out
// about it before taking the proxy's lock.
type message struct {
	flags   kavach.EventFlags
	data    []byte
	replies int    // for a request: how many replies it expects
	push    bool   // for a response: unsolicited
	note    string // what was redacted
	orig    []byte // for a request: a copy as sent, when its replies may hold a secret
}

// rawMode is how a direction's next bytes are taken after bytes the codec
// could not frame.
type rawMode int

const (
	framed  rawMode = iota // framing messages
	rawLine                // raw to the end of the current line, then framing again
	rawRest                // raw to the end of the connection (a message over the size limit)
)

// frames appends every whole message at the front of data to batch, and
// returns the bytes left over and how the direction's next bytes are to be
// taken. Bytes the codec cannot frame are one raw message up to where the
// codec says framing can start again (kavach.Abilities.Resync), or to the end of
// the connection.
func (p *Proxy) frames(conn uint64, dir kavach.Direction, split func([]byte) (int, error), data []byte, batch []message, rs *rawState) ([]byte, rawMode, []message) {
	for len(data) > 0 {
		n, err := split(data)
		if err != nil {
			i, ok := 0, p.ab.Resync != nil
			if ok {
				i, ok = p.ab.Resync(data, dir == kavach.Request)
			}
			if !ok || i <= 0 || i > len(data) {
				p.log.Warn("unparsable bytes, the rest of the direction recorded raw", "conn", conn, "dir", dir, "err", err)
				return nil, rawRest, append(batch, p.rawMessage(dir, rs, data, true))
			}
			p.log.Warn("unparsable bytes, recorded raw", "conn", conn, "dir", dir, "bytes", i, "err", err)
			batch = append(batch, p.rawMessage(dir, rs, data[:i], false))
			lineEnded := data[i-1] == '\n'
			if data = data[i:]; len(data) == 0 {
				if lineEnded {
					return data[:0], framed, batch
				}
				return nil, rawLine, batch
			}
			continue
		}
		if n == 0 {
			if len(data) > p.opts.MaxFrame {
				p.log.Warn("message larger than the limit, recorded raw", "conn", conn, "dir", dir, "bytes", len(data))
				return nil, rawRest, append(batch, p.rawMessage(dir, rs, data, true))
			}
			break
		}
		m := message{data: data[:n]}
		rs.tail = rs.tail[:0] // a raw message after this one does not follow the last
		if dir == kavach.Request {
			m.replies = p.opts.Codec.Replies(m.data)
			if red := p.opts.Redactor; red != nil && red.ReplyMayHoldSecret != nil && red.ReplyMayHoldSecret(m.data) {
				m.orig = bytes.Clone(m.data)
			}
			if p.opts.Redactor != nil {
				if out, note := p.opts.Redactor.Request(m.data); note != "" {
					m.data, m.flags, m.note = out, kavach.Redacted, note
				}
			}
		} else {
			m.push = p.opts.Codec.IsPush(m.data)
		}
		batch = append(batch, m)
		data = data[n:]
	}
	if len(data) == 0 {
		return data[:0], framed, batch
	}
	return data, framed, batch
}

// rawState is what redacting a direction's raw bytes remembers from one
// raw message to the next: the end of the last one (a secret word may be
// cut by a read), and whether the raw rest of the direction has shown a
// secret word (its arguments may come in the next read).
type rawState struct {
	tail   []byte
	sticky bool
}

// rawTail is how much of the last raw message is kept to find a secret
// word cut in two by a read.
const rawTail = 32

// rawMessage is bytes the codec could not frame, with what looks like a
// secret in them replaced when the redactor can do that (by pattern). In
// the raw rest of a direction (rest), once a secret was seen, and whenever
// one is cut by a read, the whole message is replaced: what follows it
// cannot be told apart from its arguments.
func (p *Proxy) rawMessage(dir kavach.Direction, rs *rawState, data []byte, rest bool) message {
	m := message{flags: kavach.ParseError, data: data}
	if p.opts.Redactor == nil || p.opts.Redactor.Raw == nil {
		return m
	}
	redactRaw := p.opts.Redactor.Raw
	req := dir == kavach.Request
	whole := func(why string) {
		m.data, m.flags, m.note = []byte(fmt.Sprintf("%s (%d bytes)", kavach.RedactedRaw, len(data))), kavach.ParseError|kavach.Redacted, why
	}
	out, note := redactRaw(data, req)
	cut := false
	if note == "" && len(rs.tail) > 0 {
		_, jointNote := redactRaw(append(append([]byte(nil), rs.tail...), data...), req)
		_, tailNote := redactRaw(rs.tail, req)
		cut = jointNote != "" && tailNote == ""
	}
	switch {
	case rest && rs.sticky:
		whole("raw bytes after a secret")
	case cut:
		whole("a secret cut by a read in raw bytes")
		rs.sticky = rs.sticky || rest
	case note != "":
		m.data, m.flags, m.note = out, kavach.ParseError|kavach.Redacted, note
		rs.sticky = rs.sticky || rest
	}
	rs.tail = append(rs.tail[:0], data[max(0, len(data)-rawTail):]...)
	return m
}

// record writes the messages of one read under one lock, and keeps the
// step bookkeeping.
func (p *Proxy) record(c *proxyConn, dir kavach.Direction, batch []message) {
	if len(batch) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if red := p.opts.Redactor; red != nil && red.Reply != nil && dir == kavach.Response {
		p.redactReplies(red, c, batch)
	}
	if t := p.opts.Toucher; t != nil && dir == kavach.Request {
		p.touch(t, c, batch)
	}
	evs := make([]kavach.Event, len(batch))
	for i, m := range batch {
		evs[i] = kavach.Event{Conn: c.id, Dir: dir, Flags: m.flags, Data: m.data}
	}
	now := time.Since(p.start)
	for i := range evs {
		evs[i].Offset = now
	}
	p.writeEvents(c, evs, batch)
	for _, m := range batch {
		if m.flags&kavach.ParseError != 0 {
			p.stats.Unparsed++
			m.replies = 1
		}
		if dir == kavach.Request {
			p.stats.Requests++
			p.steps++
			if m.replies > 0 {
				w := waitStep{step: p.steps, left: m.replies}
				if p.opts.FailOn != nil {
					w.request = append([]byte(nil), m.data...)
				}
				w.orig = m.orig
				w.raw = m.flags&kavach.ParseError != 0
				c.pending = append(c.pending, w)
			}
			continue
		}
		p.stats.Responses++
		if len(c.pending) == 0 || m.push && m.flags&kavach.ParseError == 0 {
			continue
		}
		w := &c.pending[0]
		if p.failure == nil && p.opts.FailOn != nil && m.flags&kavach.ParseError == 0 {
			out := p.opts.Codec.Classify(w.request, [][]byte{m.data})
			if p.opts.FailOn.Fires(out) {
				p.setFailure(kavach.Failure{Step: w.step, Oracle: *p.opts.FailOn, Signature: p.opts.FailOn.SignatureFor(out), Evidence: out.Detail})
			}
		}
		if w.left--; w.left == 0 {
			c.pending = c.pending[1:]
		}
	}
}

// redactReplies redacts the responses of batch, each with the request it
// answers as the client sent it (when kept), pairing them as record does
// without changing the pending requests. p.mu must be held.
func (p *Proxy) redactReplies(red *kavach.Redaction, c *proxyConn, batch []message) {
	k, left := 0, 0
	for i := range batch {
		m := &batch[i]
		var req []byte
		raw := false
		if k < len(c.pending) && (!m.push || m.flags&kavach.ParseError != 0) {
			if left == 0 {
				left = c.pending[k].left
			}
			req, raw = c.pending[k].orig, c.pending[k].raw
			if left--; left == 0 {
				k++
			}
		}
		if m.flags&kavach.ParseError != 0 {
			continue // redacted by pattern already
		}
		if out, note := red.Reply(req, m.data); note != "" {
			m.data, m.flags, m.note = out, m.flags|kavach.Redacted, note
		}
		if red.Raw != nil && raw {
			if out, note := red.Raw(m.data, false); note != "" {
				m.data, m.flags = out, m.flags|kavach.Redacted
				m.note = strings.TrimPrefix(m.note+", ", ", ") + "the reply to unframable bytes, by pattern"
			}
		}
	}
}

// event writes an event stamped with the time now (a close is held for
// a watch's feed; an open is not: opening early changes nothing). p.mu
// must be held.
func (p *Proxy) event(ev kavach.Event) {
	ev.Offset = time.Since(p.start)
	if p.watch != nil && ev.Dir != kavach.Open {
		p.hold(heldRec{rec: fixtures.Record{Kind: fixtures.KindEvent, Event: &ev}})
		return
	}
	p.writeEvent(ev)
}

// writeEvents writes the events of one read (batch's messages), with the
// redaction notes of their messages, or holds them for a watch's feed.
// p.mu must be held.
func (p *Proxy) writeEvents(c *proxyConn, evs []kavach.Event, batch []message) {
	if ws := p.watch; ws != nil {
		prov := p.steps
		for i := range evs {
			h := heldRec{rec: fixtures.Record{Kind: fixtures.KindEvent, Event: &evs[i]}, note: batch[i].note}
			if evs[i].Dir == kavach.Request {
				prov++
				h.prov = prov
				if evs[i].Flags&kavach.ParseError == 0 {
					h.fed = &fedReq{at: time.Now()}
					c.fed = append(c.fed, h.fed)
				}
			}
			p.hold(h)
			if h.fed != nil {
				h.fed.data = ws.held[len(ws.held)-1].rec.Event.Data // hold's copy
			}
		}
		return
	}
	first, err := p.opts.Fixture.Events(evs)
	if err != nil && p.err == nil {
		p.err = err
		p.log.Error("write fixture", "err", err)
	}
	for i, m := range batch {
		if m.note != "" && err == nil {
			p.writeNow(fixtures.Record{Kind: fixtures.KindRedaction, Redaction: &fixtures.Redaction{Seq: first + uint64(i), Note: m.note}})
		}
	}
}

// write writes rec, or holds it for a watch's feed. p.mu must be held.
func (p *Proxy) write(rec fixtures.Record) {
	if p.watch != nil {
		p.hold(heldRec{rec: rec})
		return
	}
	p.writeNow(rec)
}

func (p *Proxy) writeNow(rec fixtures.Record) {
	if err := p.opts.Fixture.Write(rec); err != nil && p.err == nil {
		p.err = err
		p.log.Error("write fixture", "err", err)
	}
}

// setFailure records the incident's failure. p.mu must be held.
func (p *Proxy) setFailure(f kavach.Failure) {
	p.failure = &f
	if p.keep {
		p.failures = append(p.failures, keptFailure{f: f, at: time.Since(p.start)})
	}
	p.write(fixtures.Record{Kind: fixtures.KindFailure, Failure: &f})
	p.log.Info("failure recorded", "step", f.Step, "signature", f.Signature)
}

// touch tells the Toucher of each request of batch, in order, before any
// is forwarded, and writes what it captures. p.mu must be held: it is what
// orders a capture before every request naming its key, whatever the
// connection. A capture that fails is logged and kept as the state's
// note; the traffic goes on.
func (p *Proxy) touch(t kavach.Toucher, c *proxyConn, batch []message) {
	step := p.steps
	for _, m := range batch {
		step++
		if m.flags&kavach.ParseError != 0 || p.touchErr != nil {
			continue
		}
		keys, err := t.Touch(c.id, step, m.data)
		for i := range keys {
			p.write(fixtures.Record{Kind: fixtures.KindStateKey, StateKey: &keys[i]})
			p.captured++
			p.capturedBytes += int64(len(keys[i].Dump))
		}
		if err != nil {
			p.touchErr = err
			p.log.Error("state capture", "step", step, "err", err)
		}
	}
}

// Captured is how many keys the Toucher captured, their payloads' bytes,
// and its first error.
func (p *Proxy) Captured() (int, int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.captured, p.capturedBytes, p.touchErr
}
