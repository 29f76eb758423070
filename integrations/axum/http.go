// Package axum is Kavach's integration for HTTP/1.1 services, such as an
// axum app: framing requests and responses (Content-Length and chunked
// bodies, keep-alive, pipelining) with their exact wire bytes kept,
// parsing them into method, path, query, headers and body (JSON bodies
// addressable by path), classifying, normalizing, redacting, and
// launching a build that takes its port from {port} or PORT.
package axum

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Limits on what Split accepts.
const (
	MaxHeader = 64 << 10 // request or status line plus headers
	MaxBody   = 64 << 20
)

// ProtocolError says where bytes stop being HTTP/1.1.
type ProtocolError struct {
	Offset int
	Reason string
	Bytes  []byte // a short copy of the bytes at fault
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("http: %s at byte %d: %.100q", e.Reason, e.Offset, e.Bytes)
}

func perr(data []byte, off int, format string, args ...any) *ProtocolError {
	end := min(len(data), off+64)
	return &ProtocolError{Offset: off, Reason: fmt.Sprintf(format, args...), Bytes: bytes.Clone(data[min(off, len(data)):end])}
}

// Message is a parsed HTTP/1.1 request or response.
type Message struct {
	Request bool
	// Request line.
	Method, Target, Path, Query string
	// Status line.
	Status int
	Reason string
	Proto  string
	// Headers in order, names as sent.
	Headers [][2]string
	// Body is the payload, with chunked transfer coding removed.
	Body []byte
	// Raw is the exact wire bytes of the whole message.
	Raw []byte
}

// Header returns the first value of a header (case-insensitive name).
func (m *Message) Header(name string) string {
	for _, h := range m.Headers {
		if strings.EqualFold(h[0], name) {
			return h[1]
		}
	}
	return ""
}

// SplitRequest finds the first whole request in data: n > 0 for a
// request of n bytes, 0 for "need more bytes", or an error.
func SplitRequest(data []byte) (int, error) {
	n, _, err := split(data, true)
	return n, err
}

// SplitResponse finds the first whole response in data. A response with
// neither Content-Length nor chunked coding ends when the connection
// does: Split keeps asking for more (the proxy records what there is at
// the close). 1xx, 204 and 304 responses have no body.
func SplitResponse(data []byte) (int, error) {
	n, _, err := split(data, false)
	return n, err
}

// Parse parses exactly one whole message.
func Parse(data []byte, request bool) (*Message, error) {
	n, m, err := split(data, request)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, perr(data, len(data), "incomplete message")
	}
	if n != len(data) {
		return nil, perr(data, n, "%d bytes after the message", len(data)-n)
	}
	return m, nil
}

// split frames one message and parses it as it goes.
func split(data []byte, request bool) (int, *Message, error) {
	end := bytes.Index(data, []byte("\r\n\r\n"))
	if end < 0 {
		if len(data) > MaxHeader {
			return 0, nil, perr(data, 0, "no end of headers within %d bytes", MaxHeader)
		}
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			// Check the first line early, so garbage is an error at once.
			if _, err := startLine(data[:i], request, data); err != nil {
				return 0, nil, err
			}
		} else if len(data) > 0 && !plausibleStart(data, request) {
			return 0, nil, perr(data, 0, "not an HTTP/1.1 %s", kind(request))
		}
		return 0, nil, nil
	}
	head := data[:end]
	lines := strings.Split(string(head), "\r\n")
	m, err := startLine([]byte(lines[0]), request, data)
	if err != nil {
		return 0, nil, err
	}
	off := len(lines[0]) + 2
	var length = -1
	chunked := false
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return 0, nil, perr(data, off, "malformed header line")
		}
		value = strings.TrimSpace(value)
		m.Headers = append(m.Headers, [2]string{name, value})
		switch strings.ToLower(name) {
		case "content-length":
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 {
				return 0, nil, perr(data, off, "bad Content-Length %q", value)
			}
			if n > MaxBody {
				return 0, nil, perr(data, off, "Content-Length %d over the limit of %d", n, MaxBody)
			}
			if length >= 0 && length != n {
				return 0, nil, perr(data, off, "two different Content-Lengths")
			}
			length = n
		case "transfer-encoding":
			if strings.EqualFold(strings.TrimSpace(lastToken(value)), "chunked") {
				chunked = true
			}
		}
		off += len(l) + 2
	}
	bodyStart := end + 4
	rest := data[bodyStart:]
	switch {
	case chunked:
		n, body, err := dechunk(rest)
		if err != nil {
			err.Offset += bodyStart
			return 0, nil, err
		}
		if n == 0 {
			return 0, nil, nil
		}
		m.Body = body
		m.Raw = data[:bodyStart+n]
		return bodyStart + n, m, nil
	case length >= 0:
		if len(rest) < length {
			return 0, nil, nil
		}
		m.Body = rest[:length]
		m.Raw = data[:bodyStart+length]
		return bodyStart + length, m, nil
	case request, m.Status < 200, m.Status == 204, m.Status == 304:
		m.Raw = data[:bodyStart]
		return bodyStart, m, nil
	}
	// A response delimited by the close of the connection.
	if len(rest) > MaxBody {
		return 0, nil, perr(data, bodyStart, "a body delimited by the close is over the limit of %d", MaxBody)
	}
	return 0, nil, nil
}

func kind(request bool) string {
	if request {
		return "request"
	}
	return "response"
}

func lastToken(v string) string {
	if i := strings.LastIndexByte(v, ','); i >= 0 {
		return v[i+1:]
	}
	return v
}

// plausibleStart says whether a first line cut short could still become
// a request or status line.
func plausibleStart(data []byte, request bool) bool {
	if !request {
		p := "HTTP/1."
		return bytes.HasPrefix([]byte(p), data[:min(len(data), len(p))]) || bytes.HasPrefix(data, []byte(p))
	}
	for _, c := range data {
		if c == ' ' {
			return true
		}
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return len(data) <= 16
}

var methods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true, "PATCH": true, "OPTIONS": true, "TRACE": true, "CONNECT": true}

func startLine(line []byte, request bool, data []byte) (*Message, *ProtocolError) {
	l := strings.TrimSuffix(string(line), "\r")
	parts := strings.SplitN(l, " ", 3)
	if request {
		if len(parts) != 3 || !methods[parts[0]] || (parts[2] != "HTTP/1.1" && parts[2] != "HTTP/1.0") ||
			!(strings.HasPrefix(parts[1], "/") || parts[1] == "*" || strings.HasPrefix(parts[1], "http://")) {
			return nil, perr(data, 0, "not an HTTP/1.1 request line")
		}
		m := &Message{Request: true, Method: parts[0], Target: parts[1], Proto: parts[2]}
		m.Path, m.Query, _ = strings.Cut(parts[1], "?")
		return m, nil
	}
	if len(parts) < 2 || (parts[0] != "HTTP/1.1" && parts[0] != "HTTP/1.0") || len(parts[1]) != 3 {
		return nil, perr(data, 0, "not an HTTP/1.1 status line")
	}
	st, err := strconv.Atoi(parts[1])
	if err != nil || st < 100 {
		return nil, perr(data, len(parts[0])+1, "bad status %q", parts[1])
	}
	m := &Message{Status: st, Proto: parts[0]}
	if len(parts) == 3 {
		m.Reason = parts[2]
	}
	return m, nil
}

// dechunk reads a chunked body: its length on the wire (0: need more) and
// the payload.
func dechunk(data []byte) (int, []byte, *ProtocolError) {
	var body []byte
	off := 0
	for {
		i := bytes.Index(data[off:], []byte("\r\n"))
		if i < 0 {
			if len(data)-off > 1024 {
				return 0, nil, perr(data, off, "chunk size line too long")
			}
			return 0, nil, nil
		}
		sizeText, _, _ := strings.Cut(string(data[off:off+i]), ";")
		size, err := strconv.ParseInt(strings.TrimSpace(sizeText), 16, 64)
		if err != nil || size < 0 {
			return 0, nil, perr(data, off, "bad chunk size")
		}
		if int64(len(body))+size > MaxBody {
			return 0, nil, perr(data, off, "chunked body over the limit of %d", MaxBody)
		}
		off += i + 2
		if size == 0 {
			// Trailers, then an empty line.
			for {
				j := bytes.Index(data[off:], []byte("\r\n"))
				if j < 0 {
					return 0, nil, nil
				}
				off += j + 2
				if j == 0 {
					if body == nil {
						body = []byte{}
					}
					return off, body, nil
				}
			}
		}
		if len(data)-off < int(size)+2 {
			return 0, nil, nil
		}
		body = append(body, data[off:off+int(size)]...)
		off += int(size)
		if string(data[off:off+2]) != "\r\n" {
			return 0, nil, perr(data, off, "chunk not followed by CRLF")
		}
		off += 2
	}
}

// Encode writes a request again: the request line with path and query,
// the headers in order with Content-Length set to the body's length (and
// chunked coding dropped), then the body.
func Encode(m *Message) []byte {
	var b bytes.Buffer
	target := m.Path
	if m.Query != "" {
		target += "?" + m.Query
	}
	proto := m.Proto
	if proto == "" {
		proto = "HTTP/1.1"
	}
	fmt.Fprintf(&b, "%s %s %s\r\n", m.Method, target, proto)
	hasLength := false
	for _, h := range m.Headers {
		switch strings.ToLower(h[0]) {
		case "transfer-encoding":
			continue
		case "content-length":
			if hasLength {
				continue
			}
			hasLength = true
			fmt.Fprintf(&b, "%s: %d\r\n", h[0], len(m.Body))
			continue
		}
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	if !hasLength && (len(m.Body) > 0 || m.Method == "POST" || m.Method == "PUT" || m.Method == "PATCH") {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(m.Body))
	}
	b.WriteString("\r\n")
	b.Write(m.Body)
	return b.Bytes()
}
