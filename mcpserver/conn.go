package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one message from the client. The tool's arguments are
// a few paths and numbers: a line longer than this is a mistake, answered
// with an error, not buffered.
const maxLine = 1 << 20

// lineTransport is MCP's stdio transport (one JSON-RPC message a line)
// made to survive any input: a line that is not JSON, not a JSON-RPC
// message, a batch, or longer than maxLine is answered with a JSON-RPC
// error and the server reads on. The SDK's own stdio connection ends the
// session on the first such line.
//
// It also answers cancellation as the protocol says: once the client has
// sent notifications/cancelled for a request, no response to that request
// is sent.
//
// When the input ends, every request read before it is still answered:
// Read reports the end only once each request handed on has had its
// response written (or dropped, when cancelled). The SDK stops writing
// responses the moment Read reports the end, so a client that pipes its
// requests in and closes stdin would otherwise get none of the answers
// still being made.
type lineTransport struct {
	r io.ReadCloser
	w io.WriteCloser
}

func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{w: t.w, r: t.r, in: make(chan jsonrpc.Message), closed: make(chan struct{}), cancelled: map[any]bool{},
		pending: map[any]bool{}, answered: make(chan struct{}, 1)}
	go c.readLoop()
	return c, nil
}

type lineConn struct {
	r io.ReadCloser
	w io.WriteCloser

	wmu sync.Mutex // one message at a time on w

	in       chan jsonrpc.Message
	readErr  error // set before in is closed
	closed   chan struct{}
	closeMu  sync.Once
	closeErr error

	cmu       sync.Mutex
	cancelled map[any]bool  // request ids the client cancelled, awaiting their (dropped) response
	pending   map[any]bool  // request ids handed on and not yet answered
	broken    bool          // a write failed: no further answer can be given
	answered  chan struct{} // a signal each time pending shrinks or broken is set
}

func (c *lineConn) SessionID() string { return "" }

// readLoop reads lines until the input ends, handing each message on and
// answering each bad line itself.
func (c *lineConn) readLoop() {
	defer close(c.in)
	br := bufio.NewReaderSize(c.r, 64<<10)
	var scan idScan
	for {
		scan.Reset()
		line, tooLong, err := readLine(br, maxLine, &scan)
		if len(line) > 0 || tooLong {
			if msg := c.decode(line, tooLong, scan.ID()); msg != nil {
				select {
				case c.in <- msg:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			c.readErr = err
			return
		}
	}
}

// readLine reads one line without its end, at most max bytes of it; the
// rest of a longer line is read and dropped, and tooLong set. Every byte
// of it, kept or dropped, goes through scan, which finds its id.
func readLine(br *bufio.Reader, max int, scan *idScan) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		scan.Write(chunk)
		if len(line)+len(chunk) > max {
			tooLong = true
			line = line[:0]
		} else if !tooLong {
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSpace(line), tooLong, err
	}
}

// decode turns a line into a message, or answers it with an error and
// returns nil.
//
// An error answer carries the line's id whenever it can be read (idScan):
// a client waits for the answer to its id, and one with id null answers
// nothing it asked.
func (c *lineConn) decode(line []byte, tooLong bool, id any) jsonrpc.Message {
	switch {
	case tooLong:
		c.writeError(id, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message longer than %d bytes: not read (the tool's arguments are a few paths and numbers)", maxLine))
		return nil
	case !json.Valid(line):
		c.writeError(id, jsonrpc.CodeParseError, "parse error: not JSON (send one JSON-RPC 2.0 message a line)")
		return nil
	case line[0] == '[':
		c.writeError(nil, jsonrpc.CodeInvalidRequest, "batches are not supported: send one JSON-RPC 2.0 message a line")
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.writeError(id, jsonrpc.CodeInvalidRequest, "invalid request: "+cutWords(err.Error()))
		return nil
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.cmu.Lock()
		inUse := c.pending[req.ID.Raw()]
		if !inUse {
			c.pending[req.ID.Raw()] = true
		}
		c.cmu.Unlock()
		if inUse {
			// Its answer would be taken for the earlier request's.
			c.writeError(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("request id %s is already in use by a request not yet answered: give each request its own id", cutWords(string(mustJSON(req.ID.Raw())))))
			return nil
		}
	}
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && req.Method == "notifications/cancelled" {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
				c.cmu.Lock()
				c.cancelled[id.Raw()] = true
				c.cmu.Unlock()
			}
		}
	}
	return msg
}

// writeError answers a line the server could not take as a request.
func (c *lineConn) writeError(id any, code int64, msg string) {
	b, err := json.Marshal(struct {
		Version string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{Version: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	if err == nil {
		_ = c.writeLine(b)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case msg, ok := <-c.in:
		if !ok {
			if err := c.drain(ctx); err != nil {
				return nil, err
			}
			if c.readErr == nil || errors.Is(c.readErr, io.EOF) {
				return nil, io.EOF
			}
			return nil, c.readErr
		}
		return msg, nil
	}
}

// drain waits, once the input has ended, until every request handed on
// is answered, or no answer can be written any more.
func (c *lineConn) drain(ctx context.Context) error {
	for {
		c.cmu.Lock()
		done := len(c.pending) == 0 || c.broken
		c.cmu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return io.EOF
		case <-c.answered:
		}
	}
}

// settle marks the request id answered (or cancelled), or the connection
// broken, and wakes drain.
func (c *lineConn) settle(id any, broken bool) {
	c.cmu.Lock()
	if id != nil {
		delete(c.pending, id)
	}
	c.broken = c.broken || broken
	c.cmu.Unlock()
	select {
	case c.answered <- struct{}{}:
	default:
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	var answers any // the request id this message answers
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		answers = resp.ID.Raw()
		c.cmu.Lock()
		dropped := c.cancelled[answers]
		delete(c.cancelled, answers)
		c.cmu.Unlock()
		if dropped { // the client cancelled it: no response (MCP cancellation)
			c.settle(answers, false)
			return nil
		}
		if resp.Error != nil {
			// An error's message may quote what the client sent (a
			// method's or a tool's name): long ones are cut. The code is
			// kept as the SDK would write it.
			cut := &jsonrpc.Error{Message: cutWords(resp.Error.Error())}
			var e *jsonrpc.Error
			if errors.As(resp.Error, &e) {
				cut.Code, cut.Data = e.Code, e.Data
			}
			r := *resp
			r.Error = cut
			msg = &r
		}
	}
	if answers != nil {
		// Settled before the write, so that a client reusing the id at
		// once is not refused; the SDK waits for this write before the
		// connection ends, so the answer still goes out.
		c.settle(answers, false)
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeLine(b)
}

func (c *lineConn) writeLine(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(b, '\n'))
	if err != nil {
		c.settle(nil, true)
	}
	return err
}

func (c *lineConn) Close() error {
	c.closeMu.Do(func() {
		close(c.closed)
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
	})
	return c.closeErr
}
