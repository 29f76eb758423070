package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
)

// Options configure a recording proxy. The zero value of every optional
// field is documented beside it.
type Options struct {
	// Codec frames the traffic into messages. Required.
	Codec kavach.Codec
	// Classifier classifies replies for FailOn. Nil: FailOn cannot be used.
	Classifier kavach.Classifier
	// Redactor removes secrets from requests before they are written.
	// Nil: nothing is redacted.
	Redactor kavach.Redactor
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
	// MaxFrame bounds the bytes buffered while waiting for a whole
	// message; past it the direction is recorded raw. Zero: 64 MiB less
	// the event header.
	MaxFrame int
}

// Proxy is a running recording proxy. It owns its listener, its
// connections and their goroutines; Close stops them all.
type Proxy struct {
	opts  Options
	ln    net.Listener
	start time.Time
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex // orders events, steps and the failure
	conns    map[uint64]*proxyConn
	nextConn uint64
	steps    int                   // requests written so far
	pending  map[uint64][]waitStep // per connection, requests waiting for replies
	lastStep map[uint64]int        // per connection, its latest step
	failure  *kavach.Failure
	err      error // first fixture write error
	stats    Stats
}

// waitStep is a request still waiting for replies.
type waitStep struct {
	step    int
	left    int
	request []byte
}

// Stats count what a proxy recorded.
type Stats struct {
	Conns     uint64
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
	if opts.FailOn != nil && (opts.FailOn.Kind != kavach.Error || opts.Classifier == nil) {
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
		opts: opts, ln: ln, start: start, log: log, ctx: ctx, cancel: cancel,
		conns: map[uint64]*proxyConn{}, pending: map[uint64][]waitStep{}, lastStep: map[uint64]int{},
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() net.Addr { return p.ln.Addr() }

// Failure returns the failure recorded so far, or nil.
func (p *Proxy) Failure() *kavach.Failure {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failure
}

// Stats returns what was recorded so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
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
	for _, c := range p.conns {
		c.client.Close()
		c.server.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
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
	for _, q := range p.pending {
		if len(q) > 0 && (step == 0 || q[0].step < step) {
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
}

func (p *Proxy) serve(client net.Conn) {
	var d net.Dialer
	server, err := d.DialContext(p.ctx, "tcp", p.opts.Upstream)
	if err != nil {
		p.log.Error("dial upstream", "upstream", p.opts.Upstream, "err", err)
		client.Close()
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
		closer <- whoClosed(p.copy(c, kavach.Request, server, client), "client", "server")
	}()
	go func() {
		defer wg.Done()
		closer <- whoClosed(p.copy(c, kavach.Response, client, server), "server", "client")
	}()
	who := <-closer
	if who == "client" {
		// Pass the half-close on: the service answers what it has, then closes.
		closeWrite(server)
	} else {
		// The service is gone; everything it sent has been forwarded.
		client.Close()
		server.Close()
	}
	wg.Wait()
	client.Close()
	server.Close()

	p.mu.Lock()
	delete(p.conns, c.id)
	p.event(kavach.Event{Conn: c.id, Dir: kavach.Close, Data: []byte(who)})
	if who == "server" && p.failure == nil {
		if q := p.pending[c.id]; len(q) > 0 {
			p.setFailure(kavach.Failure{Step: q[0].step, Oracle: kavach.Oracle{Kind: kavach.Crash}, Signature: "crash",
				Evidence: "the service closed the connection before answering"})
		}
	}
	delete(p.pending, c.id)
	delete(p.lastStep, c.id)
	p.mu.Unlock()
	p.log.Debug("close", "conn", c.id, "by", who)
}

func whoClosed(srcEnded bool, src, dst string) string {
	if srcEnded {
		return src
	}
	return dst
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

// copy forwards src to dst until src ends or a write fails, and records
// the bytes as whole messages of direction dir: each message is written
// to the fixture before its bytes are forwarded, so a reply can never
// precede its request in the fixture. Bytes the codec cannot frame are
// forwarded unchanged and recorded raw, marked ParseError, and so is the
// rest of that direction. It reports whether it ended because src did
// (rather than because dst could not be written).
func (p *Proxy) copy(c *proxyConn, dir kavach.Direction, dst io.Writer, src io.Reader) (srcEnded bool) {
	split := p.opts.Codec.SplitRequest
	if dir == kavach.Response {
		split = p.opts.Codec.SplitResponse
	}
	buf := make([]byte, 64<<10)
	var pending []byte // bytes read but not yet a whole message
	raw := false
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if raw {
				p.record(c.id, dir, kavach.ParseError, chunk)
			} else {
				pending = append(pending, chunk...)
				pending, raw = p.frames(c.id, dir, split, pending)
			}
			if _, err := dst.Write(chunk); err != nil {
				return false
			}
		}
		if rerr != nil {
			if len(pending) > 0 {
				// The stream ended inside a message: keep what there was.
				p.record(c.id, dir, kavach.ParseError, pending)
			}
			return true
		}
	}
}

// frames records every whole message at the front of data and returns
// the bytes left over, and whether the direction has gone raw.
func (p *Proxy) frames(conn uint64, dir kavach.Direction, split func([]byte) (int, error), data []byte) ([]byte, bool) {
	for len(data) > 0 {
		n, err := split(data)
		if err != nil {
			p.log.Warn("unparsable bytes, recorded raw", "conn", conn, "dir", dir, "err", err)
			p.record(conn, dir, kavach.ParseError, data)
			return nil, true
		}
		if n == 0 {
			if len(data) > p.opts.MaxFrame {
				p.log.Warn("message larger than the limit, recorded raw", "conn", conn, "dir", dir, "bytes", len(data))
				p.record(conn, dir, kavach.ParseError, data)
				return nil, true
			}
			break
		}
		p.record(conn, dir, 0, data[:n])
		data = data[n:]
	}
	if len(data) == 0 {
		return data[:0], false
	}
	return data, false
}

// record writes one message and keeps the step bookkeeping.
func (p *Proxy) record(conn uint64, dir kavach.Direction, flags kavach.EventFlags, data []byte) {
	ev := kavach.Event{Conn: conn, Dir: dir, Flags: flags, Data: data}
	var note string
	if dir == kavach.Request && flags == 0 && p.opts.Redactor != nil {
		if out, n := p.opts.Redactor.Redact(data); n != "" {
			ev.Data, ev.Flags, note = out, kavach.Redacted, n
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	seq := p.event(ev)
	if note != "" && seq != 0 {
		p.write(fixtures.Record{Kind: fixtures.KindRedaction, Redaction: &fixtures.Redaction{Seq: seq, Note: note}})
	}
	switch {
	case flags&kavach.ParseError != 0:
		p.stats.Unparsed++
	}
	codec := p.opts.Codec
	switch dir {
	case kavach.Request:
		p.stats.Requests++
		p.steps++
		p.lastStep[conn] = p.steps
		n := 1
		if flags&kavach.ParseError == 0 {
			n = codec.Replies(data)
		}
		if n > 0 {
			p.pending[conn] = append(p.pending[conn], waitStep{step: p.steps, left: n, request: append([]byte(nil), data...)})
		}
	case kavach.Response:
		p.stats.Responses++
		q := p.pending[conn]
		if len(q) == 0 || (flags&kavach.ParseError == 0 && codec.IsPush(data)) {
			return
		}
		w := &q[0]
		if p.failure == nil && p.opts.FailOn != nil && flags&kavach.ParseError == 0 {
			out := p.opts.Classifier.Classify(w.request, [][]byte{data})
			if p.opts.FailOn.Fires(out) {
				p.setFailure(kavach.Failure{Step: w.step, Oracle: *p.opts.FailOn, Signature: "error:" + out.Class, Evidence: out.Detail})
			}
		}
		if w.left--; w.left == 0 {
			p.pending[conn] = q[1:]
		}
	}
}

// event writes an event stamped with the time now. p.mu must be held.
func (p *Proxy) event(ev kavach.Event) uint64 {
	ev.Offset = time.Since(p.start)
	seq, err := p.opts.Fixture.Event(ev)
	if err != nil && p.err == nil {
		p.err = err
		p.log.Error("write fixture", "err", err)
	}
	return seq
}

func (p *Proxy) write(rec fixtures.Record) {
	if err := p.opts.Fixture.Write(rec); err != nil && p.err == nil {
		p.err = err
		p.log.Error("write fixture", "err", err)
	}
}

// setFailure records the incident's failure. p.mu must be held.
func (p *Proxy) setFailure(f kavach.Failure) {
	p.failure = &f
	p.write(fixtures.Record{Kind: fixtures.KindFailure, Failure: &f})
	p.log.Info("failure recorded", "step", f.Step, "signature", f.Signature)
}
