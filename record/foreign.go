package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
)

// Writes that did not come through the proxy (docs/record.md, "Writes by
// other clients"). The service's own feed of every command it runs (a
// kavach.Watcher: MONITOR) shows them where it ran them, among the proxied
// requests. A proxied connection is told from another client by the
// address the service sees it dial from; a proxied request is found in
// the feed by its arguments, in its connection's order.
//
// While a watch runs, the proxy holds what it would write until the feed
// has shown the service running the requests before it: a write of
// another client that the feed shows next is written at once, before
// everything still held, so it lands in the fixture after every proxied
// request the service ran before it and before every one it ran after.
// What the feed never shows (a command the service keeps from MONITOR)
// is written after holdMax, and a write of another client that the feed
// then shows after it may have run before it: where the two name a key in
// common, the write is marked Unordered.

// holdMax bounds how long the proxy holds an event for the feed.
const holdMax = time.Second

// watchState is the proxy's side of a watch; guarded by Proxy.mu.
type watchState struct {
	w WatchOptions

	marked   bool            // the snapshot's mark was seen
	captured map[string]bool // "DB:KEY" captured (first-touch), in the feed's order
	origins  map[string]*proxyConn
	others   map[string]*otherConn
	held     []heldRec

	flushedProv  int // the provisional step of the latest proxied request written
	foreignSteps int
	breaks       []stepBreak
	lastOffset   time.Duration

	stats ForeignStats
	ended error // why the feed ended early, if it did

	// uncertain are the keys of the Unordered writes (all: one named
	// keys it did not say); orderUnknown the steps whose answer may
	// depend on their order (fixtures.State.OrderUnknown).
	uncertain    map[string]bool
	uncertainAll bool
	orderUnknown []int

	stop    chan struct{}
	closing sync.Once
	wg      sync.WaitGroup
}

// WatchOptions start a watch of the service (Options.Watch).
type WatchOptions struct {
	Watcher kavach.Watcher
	// AfterMark: the writes the feed shows before the snapshot's mark
	// are in the snapshot, not written.
	AfterMark bool
	// Capture is the address the first-touch captures come from; a write
	// to a key before its capture is in the capture, not written. "":
	// none.
	Capture string
}

// ForeignStats count the writes of other clients a watch saw.
type ForeignStats struct {
	Written   int // written to the fixture
	Unordered int // of them, marked Unordered
	Absorbed  int // before the first-touch capture of their keys: in it
	Blocking  int // blocking commands, not written (their wake-up is not in the feed)
}

// heldRec is a record held for the feed.
type heldRec struct {
	rec  fixtures.Record
	note string // a redaction note for the event, written after it with its seq
	prov int    // a proxied request's provisional step
	fed  *fedReq
	at   time.Time
}

// fedReq is a proxied request the feed has not shown yet.
type fedReq struct {
	data    []byte
	keys    [][]byte // asked only when needed (keysOf)
	known   bool
	asked   bool
	written bool // its event is in the fixture
	step    int  // its step in the fixture, once written
	at      time.Time
}

// keysOf are the keys e names, asked of w once, when first needed (a
// write of another client crossing it, or an Unordered one before it):
// most requests never need them.
func (e *fedReq) keysOf(w kavach.Watcher) ([][]byte, bool) {
	if !e.asked {
		e.asked = true
		e.keys, e.known = w.Keys(e.data)
	}
	return e.keys, e.known
}

// otherConn is the connection of the fixture's own for one client that
// did not come through the proxy.
type otherConn struct {
	id uint64
	db int
}

// stepBreak says that a write of another client was written after the
// proxied request with provisional step prov: the proxied requests after
// it are cum steps later.
type stepBreak struct{ prov, cum int }

// Watch starts following the service's feed; Close ends it.
func (p *Proxy) Watch(o WatchOptions) {
	ws := &watchState{w: o, captured: map[string]bool{}, origins: map[string]*proxyConn{},
		others: map[string]*otherConn{}, uncertain: map[string]bool{}, stop: make(chan struct{})}
	p.mu.Lock()
	p.watch = ws
	for _, c := range p.conns {
		ws.origins[c.server.LocalAddr().String()] = c
	}
	p.mu.Unlock()
	ws.wg.Add(2)
	go func() {
		defer ws.wg.Done()
		for {
			r, err := o.Watcher.Next()
			p.mu.Lock()
			if err != nil {
				select {
				case <-ws.stop:
				default:
					if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
						// The service ended (the incident's crash, say):
						// the feed with it.
						p.mu.Unlock()
						return
					}
					ws.ended = err
					p.log.Error("watch of the service ended", "err", err)
				}
				p.mu.Unlock()
				return
			}
			p.ran(r)
			p.mu.Unlock()
		}
	}()
	go func() {
		defer ws.wg.Done()
		t := time.NewTicker(holdMax / 10)
		defer t.Stop()
		for {
			select {
			case <-ws.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.flushOld(time.Now())
				p.mu.Unlock()
			}
		}
	}()
}

// endWatch stops the watch and writes what is held. p.mu must not be held.
func (p *Proxy) endWatch() {
	p.mu.Lock()
	ws := p.watch
	p.mu.Unlock()
	if ws == nil {
		return
	}
	ws.closing.Do(func() { close(ws.stop) })
	ws.w.Watcher.Close()
	ws.wg.Wait()
	p.mu.Lock()
	p.flush(len(ws.held))
	p.mu.Unlock()
}

// Foreign is what the watch saw, and why it ended early ("" if it did
// not).
func (p *Proxy) Foreign() (ForeignStats, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watch == nil {
		return ForeignStats{}, ""
	}
	why := ""
	if p.watch.ended != nil {
		why = p.watch.ended.Error()
	}
	return p.watch.stats, why
}

// ran takes one command of the feed. p.mu is held.
func (p *Proxy) ran(r kavach.Ran) {
	ws := p.watch
	switch {
	case r.Mark:
		ws.marked = true
		return
	case ws.origins[r.Origin] != nil:
		if !r.Script {
			p.matched(ws.origins[r.Origin], r)
		}
		return
	case ws.w.Capture != "" && r.Origin == ws.w.Capture:
		for _, k := range r.Keys {
			ws.captured[keyID(r.DB, k)] = true
		}
		return
	case r.Origin == "" || !r.Write || r.Caller || ws.w.AfterMark && !ws.marked:
		// Not a write of its own (a script's writes come one by one), or
		// one the snapshot holds.
		return
	case r.Blocking:
		// What it takes once woken is not in the feed: the later reads
		// of its keys are of an effect not known.
		ws.stats.Blocking++
		ws.uncertainAll = ws.uncertainAll || !r.KeysKnown
		for _, k := range r.Keys {
			ws.uncertain[string(k)] = true
		}
		return
	}
	unordered := false
	if ws.w.Capture != "" && r.KeysKnown {
		n := 0
		for _, k := range r.Keys {
			if ws.captured[keyID(r.DB, k)] {
				n++
			}
		}
		switch {
		case n == 0 && len(r.Keys) > 0:
			ws.stats.Absorbed++
			return
		case n < len(r.Keys):
			unordered = true
		}
	}
	p.writeOther(r, unordered || p.crossed(r))
}

func keyID(db int, key []byte) string { return strconv.Itoa(db) + ":" + string(key) }

// matched takes the feed's line for a proxied request of c: the requests
// of c before it that the feed skipped are dropped, and what was held
// up to it is written. p.mu is held.
func (p *Proxy) matched(c *proxyConn, r kavach.Ran) {
	for k, e := range c.fed[:min(len(c.fed), 64)] {
		if !r.Same(e.data) {
			continue
		}
		c.fed = c.fed[k+1:]
		if e.written {
			return
		}
		for i, h := range p.watch.held {
			if h.fed == e {
				p.flush(i + 1)
				return
			}
		}
		return
	}
}

// crossed reports whether a proxied request already written, which the
// feed has not shown yet (so the service may run it after r), names a key
// r names; those requests' steps are of an order not known. p.mu is held.
func (p *Proxy) crossed(r kavach.Ran) bool {
	crossed := false
	for _, c := range p.watch.origins {
		for _, e := range c.fed {
			if !e.written {
				break
			}
			if keys, known := e.keysOf(p.watch.w.Watcher); !known || !r.KeysKnown || shareKey(keys, r.Keys) {
				crossed = true
				p.orderUnknown(e.step)
			}
		}
	}
	return crossed
}

// orderUnknown adds step n to the steps of an order not known. p.mu is
// held.
func (p *Proxy) orderUnknown(n int) {
	ws := p.watch
	if len(ws.orderUnknown) < fixtures.MaxOrderUnknown {
		ws.orderUnknown = append(ws.orderUnknown, n)
	}
}

// uncertainFor reports whether a proxied request naming keys (known: the
// service said where they are) may read what an Unordered write wrote.
// p.mu is held.
func (p *Proxy) uncertainFor(keys [][]byte, known bool) bool {
	ws := p.watch
	if ws.uncertainAll || len(ws.uncertain) > 0 && !known {
		return true
	}
	for _, k := range keys {
		if ws.uncertain[string(k)] {
			return true
		}
	}
	return false
}

// OrderUnknown are the steps whose answer may depend on the order of a
// write of another client (fixtures.State.OrderUnknown), in order.
func (p *Proxy) OrderUnknown() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watch == nil {
		return nil
	}
	out := slices.Clone(p.watch.orderUnknown)
	slices.Sort(out)
	return slices.Compact(out)
}

func shareKey(a, b [][]byte) bool {
	for _, x := range a {
		for _, y := range b {
			if bytes.Equal(x, y) {
				return true
			}
		}
	}
	return false
}

// writeOther writes r on its client's connection of its own, before what
// is held. p.mu is held.
func (p *Proxy) writeOther(r kavach.Ran, unordered bool) {
	ws := p.watch
	off := min(r.Time.Sub(p.start), time.Since(p.start))
	if len(ws.held) > 0 && ws.held[0].rec.Event != nil {
		off = min(off, ws.held[0].rec.Event.Offset)
	}
	off = max(off, ws.lastOffset, 0)
	oc := ws.others[r.Origin]
	if oc == nil {
		p.nextConn++
		oc = &otherConn{id: p.nextConn}
		ws.others[r.Origin] = oc
		p.writeEvent(kavach.Event{Conn: oc.id, Dir: kavach.Open, Offset: off})
	}
	flags := kavach.Foreign
	if unordered {
		flags |= kavach.Unordered
		ws.stats.Unordered++
		ws.uncertainAll = ws.uncertainAll || !r.KeysKnown
		for _, k := range r.Keys {
			ws.uncertain[string(k)] = true
		}
	}
	if r.DB != oc.db {
		sel := fmt.Appendf(nil, "*2\r\n$6\r\nSELECT\r\n$%d\r\n%d\r\n", len(strconv.Itoa(r.DB)), r.DB)
		p.writeEvent(kavach.Event{Conn: oc.id, Dir: kavach.Request, Flags: kavach.Foreign, Offset: off, Data: sel})
		p.otherStep()
		oc.db = r.DB
	}
	data, note := r.Request, ""
	if red := p.opts.Redactor; red != nil {
		// Another client's secrets are redacted as a proxied client's.
		if data, note = red.Request(data); note != "" {
			flags |= kavach.Redacted
		}
	}
	seq := p.writeEvent(kavach.Event{Conn: oc.id, Dir: kavach.Request, Flags: flags, Offset: off, Data: data})
	if note != "" && seq > 0 {
		p.writeNow(fixtures.Record{Kind: fixtures.KindRedaction, Redaction: &fixtures.Redaction{Seq: seq, Note: note}})
	}
	p.otherStep()
	ws.stats.Written++
}

func (p *Proxy) otherStep() {
	ws := p.watch
	ws.foreignSteps++
	ws.breaks = append(ws.breaks, stepBreak{prov: ws.flushedProv, cum: ws.foreignSteps})
}

// step is the fixture's step of the proxied request with provisional
// step prov. p.mu is held.
func (p *Proxy) step(prov int) int {
	if p.watch == nil {
		return prov
	}
	cum := 0
	for _, b := range p.watch.breaks {
		if b.prov >= prov {
			break
		}
		cum = b.cum
	}
	return prov + cum
}

// hold keeps a record for the feed. p.mu is held.
func (p *Proxy) hold(h heldRec) {
	h.at = time.Now()
	if h.rec.Event != nil {
		ev := *h.rec.Event
		ev.Data = bytes.Clone(ev.Data)
		h.rec.Event = &ev
	}
	p.watch.held = append(p.watch.held, h)
}

// flushOld writes what was held longer than holdMax, and forgets the
// written requests the feed has not shown for ten times as long (a
// command the service keeps from MONITOR). p.mu is held.
func (p *Proxy) flushOld(now time.Time) {
	ws := p.watch
	n := 0
	for i, h := range ws.held {
		if now.Sub(h.at) > holdMax {
			n = i + 1
		}
	}
	p.flush(n)
	for _, c := range ws.origins {
		for len(c.fed) > 0 && c.fed[0].written && now.Sub(c.fed[0].at) > 10*holdMax {
			c.fed = c.fed[1:]
		}
	}
}

// flush writes the first n held records. p.mu is held.
func (p *Proxy) flush(n int) {
	ws := p.watch
	for _, h := range ws.held[:n] {
		switch {
		case h.rec.Event != nil:
			if h.prov > 0 {
				ws.flushedProv = h.prov
			}
			seq := p.writeEvent(*h.rec.Event)
			if h.note != "" && seq > 0 {
				p.writeNow(fixtures.Record{Kind: fixtures.KindRedaction, Redaction: &fixtures.Redaction{Seq: seq, Note: h.note}})
			}
			if h.fed != nil {
				h.fed.written, h.fed.step = true, h.prov+ws.foreignSteps
				if len(ws.uncertain) > 0 || ws.uncertainAll {
					if keys, known := h.fed.keysOf(ws.w.Watcher); p.uncertainFor(keys, known) {
						p.orderUnknown(h.fed.step)
					}
				}
			}
		case h.rec.Failure != nil:
			f := *h.rec.Failure
			f.Step = p.step(f.Step)
			p.writeNow(fixtures.Record{Kind: fixtures.KindFailure, Failure: &f})
		default:
			p.writeNow(h.rec)
		}
	}
	clear(ws.held[:n])
	ws.held = ws.held[n:]
}

// writeEvent writes ev now, as stamped; its seq, 0 on error. p.mu is held.
func (p *Proxy) writeEvent(ev kavach.Event) uint64 {
	if p.watch != nil {
		p.watch.lastOffset = max(p.watch.lastOffset, ev.Offset)
	}
	seq, err := p.opts.Fixture.Event(ev)
	if err != nil && p.err == nil {
		p.err = err
		p.log.Error("write fixture", "err", err)
	}
	return seq
}
