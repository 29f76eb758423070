package incidents

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/record"
)

// SplitPatches is the folder of the HTTP example's patches: the planted
// bug, and the candidate fixes applied on top of it.
func SplitPatches() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "examples", "http-split-panic")
}

// HTTPRequest is one request of an HTTP session, on a connection.
type HTTPRequest struct {
	Conn   int
	Method string
	Path   string
	Body   string
}

// Split is the HTTP incident's session, on two keep-alive connections: a
// clerk creates items and reads them back, a second clerk lists them,
// then the first splits an item's price in 2 and in 0 parts. Parts 0
// divides by zero on the old build: the handler panics and the
// connection closes unanswered (step 7, a crash).
var Split = []HTTPRequest{
	{1, "POST", "/api/v1/items", `{"name":"lamp","price_cents":1999,"quantity":1}`},
	{1, "GET", "/api/v1/items/1", ""},
	{2, "POST", "/api/v1/items", `{"name":"desk","price_cents":12000,"quantity":2}`},
	{2, "GET", "/api/v1/items", ""},
	{1, "POST", "/api/v1/items/1/split", `{"parts":2}`},
	{2, "GET", "/health", ""},
	{1, "POST", "/api/v1/items/1/split", `{"parts":0}`},
}

// RecordSplit records the HTTP incident into out: the old build started by
// the recording session, the session sent through the proxy, the
// recording stopped after the last request is answered or its connection
// closed.
func RecordSplit(out, old string) error {
	return RecordHTTP(out, &kavach.Launch{Path: old, Args: []string{"--port", "{port}"}}, "", Split)
}

// SplitMetrics is the HTTP incident with the service's request counters
// read (GET /metrics, a Prometheus text page) before the failure: a
// service that counts every request it sees, Kavach's probes included if
// they were requests. Step 6 (parts 0) kills the connection.
var SplitMetrics = []HTTPRequest{
	{1, "POST", "/api/v1/items", `{"name":"lamp","price_cents":1999,"quantity":1}`},
	{1, "GET", "/api/v1/items/1", ""},
	{2, "POST", "/api/v1/items", `{"name":"desk","price_cents":12000,"quantity":2}`},
	{2, "GET", "/metrics", ""},
	{1, "POST", "/api/v1/items/1/split", `{"parts":2}`},
	{1, "POST", "/api/v1/items/1/split", `{"parts":0}`},
}

// RecordHTTP records session into out, through a proxy in front of the
// build that build starts, or (build nil) of the service running at
// upstream. The last request must kill its connection.
func RecordHTTP(out string, build *kavach.Launch, upstream string, session []HTTPRequest) error {
	s := record.Session{Out: out, Launch: build, Upstream: upstream,
		Proxy: record.Options{Codec: axum.Integration{}, Redactor: axum.Integration{}.Abilities().Redaction}}
	rec, err := s.Go(context.Background(), axum.Protocol)
	if err != nil {
		return err
	}
	defer rec.Stop()
	a := rec.Addr
	conns := map[int]net.Conn{}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i, r := range session {
		c := conns[r.Conn]
		if c == nil {
			var err error
			if c, err = net.Dial("tcp", a); err != nil {
				return err
			}
			conns[r.Conn] = c
		}
		_, err := SendHTTP(c, r)
		if err != nil && i != len(session)-1 {
			return fmt.Errorf("request %d (%s %s): %w", i+1, r.Method, r.Path, err)
		}
		if err == nil && i == len(session)-1 {
			return fmt.Errorf("the old build answered the incident's last request (%s %s): the planted bug is not there", r.Method, r.Path)
		}
	}
	time.Sleep(300 * time.Millisecond) // the proxy sees the close
	_, err = rec.Stop()
	return err
}

// SendHTTP sends one request of a session on c and reads its response.
func SendHTTP(c net.Conn, r HTTPRequest) ([]byte, error) {
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: kavach\r\nUser-Agent: clerk/1\r\n", r.Method, r.Path)
	if r.Body != "" {
		req += fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n", len(r.Body))
	}
	req += "\r\n" + r.Body
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(req)); err != nil {
		return nil, err
	}
	return readResponse(c)
}

// readResponse reads one whole HTTP response.
func readResponse(c net.Conn) ([]byte, error) {
	var buf []byte
	chunk := make([]byte, 4096)
	for {
		if n, err := axum.SplitResponse(buf); err != nil {
			return nil, err
		} else if n > 0 {
			return buf[:n], nil
		}
		n, err := c.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if err != nil {
			if m, _ := axum.SplitResponse(buf); m > 0 {
				return buf[:m], nil
			}
			return nil, err
		}
	}
}
