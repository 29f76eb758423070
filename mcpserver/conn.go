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
type lineTransport struct {
	r io.ReadCloser
	w io.WriteCloser
}

func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{w: t.w, r: t.r, in: make(chan jsonrpc.Message), closed: make(chan struct{}), cancelled: map[any]bool{}, inFlight: map[any]bool{}}
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
	cancelled map[any]bool // request ids the client cancelled, awaiting their (dropped) response
	inFlight  map[any]bool // ids of requests not yet answered
}

func (c *lineConn) SessionID() string { return "" }

// readLoop reads lines until the input ends, handing each message on and
// answering each bad line itself.
func (c *lineConn) readLoop() {
	defer close(c.in)
	br := bufio.NewReaderSize(c.r, 64<<10)
	for {
		line, tooLong, err := readLine(br, maxLine)
		if len(line) > 0 || tooLong {
			if msg := c.decode(line, tooLong); msg != nil {
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
// rest of a longer line is read and dropped, and tooLong set.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
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
func (c *lineConn) decode(line []byte, tooLong bool) jsonrpc.Message {
	switch {
	case tooLong:
		c.writeError(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message longer than %d bytes: not read", maxLine))
		return nil
	case !json.Valid(line):
		c.writeError(nil, jsonrpc.CodeParseError, "parse error: not JSON (send one JSON-RPC 2.0 message a line)")
		return nil
	case line[0] == '[':
		c.writeError(nil, jsonrpc.CodeInvalidRequest, "batches are not supported: send one JSON-RPC 2.0 message a line")
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		var probe struct {
			ID any `json:"id"`
		}
		_ = json.Unmarshal(line, &probe)
		id := probe.ID
		if _, err := jsonrpc.MakeID(id); err != nil {
			id = nil
		}
		c.writeError(id, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		// A second request with the id of one not yet answered would
		// leave one of them unanswered: the second is refused.
		c.cmu.Lock()
		dup := c.inFlight[req.ID.Raw()]
		c.inFlight[req.ID.Raw()] = true
		c.cmu.Unlock()
		if dup {
			c.writeError(req.ID.Raw(), jsonrpc.CodeInvalidRequest, fmt.Sprintf("request id %v is in use by a request not yet answered: give each request a new id", req.ID.Raw()))
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

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case msg, ok := <-c.in:
		if !ok {
			if c.readErr == nil || errors.Is(c.readErr, io.EOF) {
				return nil, io.EOF
			}
			return nil, c.readErr
		}
		return msg, nil
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		c.cmu.Lock()
		dropped := c.cancelled[resp.ID.Raw()]
		delete(c.cancelled, resp.ID.Raw())
		delete(c.inFlight, resp.ID.Raw())
		c.cmu.Unlock()
		if dropped { // the client cancelled it: no response (MCP cancellation)
			return nil
		}
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
	return err
}

func (c *lineConn) Close() error {
	c.closeMu.Do(func() {
		close(c.closed)
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
	})
	return c.closeErr
}
