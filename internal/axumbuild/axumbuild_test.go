package axumbuild

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kavach-dev/kavach/internal/syncbuf"
)

// The planted fault: POST /api/v1/items/{id}/split with "parts": 0 divides
// by zero and the handler panics. The narrow fix, on top of it, answers 422
// for item 1 only.
const (
	panicsPatch = "split-panics.patch"
	narrowPatch = "split-narrow.patch"
)

const jsonType = "application/json"

func TestBase(t *testing.T) {
	t.Parallel()
	bin := MustBuild(t)
	s := startServer(t, bin, nil)

	s.expect(t, "GET", "/health", "", 200, `{"status":"ok"}`)

	resp := s.do(t, "POST", "/api/v1/items", `{"name":"pen","price_cents":1001,"quantity":3}`)
	pen := `{"id":1,"name":"pen","price_cents":1001,"quantity":3,"unit_price_cents":333}`
	check(t, resp, 201, pen)
	if loc := resp.Header.Get("Location"); loc != "/api/v1/items/1" {
		t.Errorf("POST /api/v1/items: Location %q, want /api/v1/items/1", loc)
	}
	s.expect(t, "GET", "/api/v1/items/1", "", 200, pen)
	s.expect(t, "POST", "/api/v1/items", `{"name":"ink","price_cents":250,"quantity":1}`, 201,
		`{"id":2,"name":"ink","price_cents":250,"quantity":1,"unit_price_cents":250}`)
	s.expect(t, "GET", "/api/v1/items", "", 200,
		`[`+pen+`,{"id":2,"name":"ink","price_cents":250,"quantity":1,"unit_price_cents":250}]`)

	// Errors are JSON too.
	s.expect(t, "GET", "/api/v1/items/99", "", 404, `{"error":"item 99 not found"}`)
	s.expect(t, "GET", "/nowhere", "", 404, `{"error":"no route"}`)
	s.expect(t, "GET", "/api/v1/nowhere", "", 404, `{"error":"no route"}`)
	s.expect(t, "PUT", "/api/v1/items", "", 405, `{"error":"method not allowed"}`)
	s.expect(t, "POST", "/api/v1/items", `{"name":"","price_cents":1,"quantity":1}`, 422, `{"error":"name must not be empty"}`)
	s.expect(t, "POST", "/api/v1/items", `{"name":"x","price_cents":1,"quantity":0}`, 422, `{"error":"quantity must be at least 1"}`)

	s.expect(t, "POST", "/api/v1/items/1/split", `{"parts":2}`, 200,
		`{"id":1,"price_cents":1001,"parts":2,"each_cents":500,"remainder_cents":1}`)
	s.expect(t, "POST", "/api/v1/items/1/split", `{"parts":0}`, 422, `{"error":"parts must be at least 1"}`)
	s.expect(t, "POST", "/api/v1/items/1/split", `{"parts":-3}`, 422, `{"error":"parts must be at least 1"}`)
	s.expect(t, "POST", "/api/v1/items/7/split", `{"parts":2}`, 404, `{"error":"item 7 not found"}`)

	s.expect(t, "DELETE", "/api/v1/items/2", "", 204, "")
	s.expect(t, "DELETE", "/api/v1/items/2", "", 404, `{"error":"item 2 not found"}`)
	// Ids are not reused.
	s.expect(t, "POST", "/api/v1/items", `{"name":"cap","price_cents":90,"quantity":2}`, 201,
		`{"id":3,"name":"cap","price_cents":90,"quantity":2,"unit_price_cents":45}`)

	// 2xx: health, 3 creates, 1 get, 1 list, 1 split, 1 delete = 8.
	// 4xx: 3 not found or no route, 1 405, 2 invalid items, 3 split
	// errors, 1 delete = 10. The metrics request is counted in (19
	// requests) but not out: it is being answered.
	m := s.metrics(t)
	want := map[string]int{
		`axum_service_requests_total`:               19,
		`axum_service_responses_total{class="2xx"}`: 8,
		`axum_service_responses_total{class="4xx"}`: 10,
		`axum_service_responses_total{class="5xx"}`: 0,
		`axum_service_items`:                        2,
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("/metrics: %s = %d, want %d", k, m[k], v)
		}
	}

	start := time.Now()
	if again := MustBuild(t); again != bin {
		t.Errorf("second Build() = %s, want the cached %s", again, bin)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("second Build() took %v: not a cache hit", took)
	}
}

func TestPort(t *testing.T) {
	t.Parallel()
	bin := MustBuild(t)
	// --port wins over PORT.
	port := freePort(t)
	s := startServerOn(t, bin, port, []string{"--port", strconv.Itoa(port)}, "PORT=1")
	s.expect(t, "GET", "/health", "", 200, `{"status":"ok"}`)

	cmd := exec.Command(bin, "--bogus")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 2 || !strings.Contains(string(out), "unknown argument") {
		t.Errorf("axum-service --bogus: exit %d, %v, %q; want exit 2 and unknown argument", code, err, out)
	}
}

func TestSplitPanics(t *testing.T) {
	t.Parallel()
	bin := MustBuild(t, MustPatch(t, panicsPatch))
	if base := MustBuild(t); base == bin {
		t.Fatalf("patched and base builds share the path %s", bin)
	}
	s := startServer(t, bin, nil)
	s.expect(t, "POST", "/api/v1/items", `{"name":"pen","price_cents":1001,"quantity":3}`, 201,
		`{"id":1,"name":"pen","price_cents":1001,"quantity":3,"unit_price_cents":333}`)
	s.expect(t, "POST", "/api/v1/items/1/split", `{"parts":2}`, 200,
		`{"id":1,"price_cents":1001,"parts":2,"each_cents":500,"remainder_cents":1}`)

	// net/http: the request fails, no response.
	s.expectNoResponse(t, "/api/v1/items/1/split", `{"parts":0}`)
	// On the wire: the connection is closed without a byte.
	got, err := s.raw(t, "/api/v1/items/1/split", `{"parts":0}`)
	if len(got) != 0 || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		t.Errorf("raw split with parts 0: read %q, %v; want nothing, then EOF or a reset", got, err)
	}
	t.Logf("raw split with parts 0: read %d bytes, then %v", len(got), err)

	// The process lives on and still answers, on new connections.
	if s.exited() {
		t.Fatalf("the server exited after the panic: %v\n%s", s.waitErr, s.stderr.String())
	}
	s.expect(t, "GET", "/health", "", 200, `{"status":"ok"}`)
	s.expect(t, "GET", "/api/v1/items/1", "", 200,
		`{"id":1,"name":"pen","price_cents":1001,"quantity":3,"unit_price_cents":333}`)
	if !strings.Contains(s.stderr.String(), "attempt to divide by zero") {
		t.Errorf("stderr does not tell of the panic:\n%s", s.stderr.String())
	}

	// The panicked requests were counted in, never out: 6 requests before
	// this one, 4 responses (create, split, health, get).
	m := s.metrics(t)
	if m["axum_service_requests_total"] != 7 || m[`axum_service_responses_total{class="2xx"}`] != 4 ||
		m[`axum_service_responses_total{class="5xx"}`] != 0 {
		t.Errorf("/metrics after two panics: %v", m)
	}
}

func TestSplitNarrow(t *testing.T) {
	t.Parallel()
	bin := MustBuild(t, MustPatch(t, panicsPatch), MustPatch(t, narrowPatch))
	s := startServer(t, bin, nil)
	s.expect(t, "POST", "/api/v1/items", `{"name":"pen","price_cents":1001,"quantity":3}`, 201,
		`{"id":1,"name":"pen","price_cents":1001,"quantity":3,"unit_price_cents":333}`)
	s.expect(t, "POST", "/api/v1/items", `{"name":"ink","price_cents":250,"quantity":1}`, 201,
		`{"id":2,"name":"ink","price_cents":250,"quantity":1,"unit_price_cents":250}`)
	// The incident's exact input is fixed...
	s.expect(t, "POST", "/api/v1/items/1/split", `{"parts":0}`, 422, `{"error":"parts must be at least 1"}`)
	// ...any other item still panics.
	s.expectNoResponse(t, "/api/v1/items/2/split", `{"parts":0}`)
	s.expect(t, "GET", "/health", "", 200, `{"status":"ok"}`)
}

func TestPatchErrors(t *testing.T) {
	t.Parallel()
	// The narrow fix applies on top of split-panics only.
	_, err := Build(MustPatch(t, narrowPatch))
	if err == nil || !strings.Contains(err.Error(), "patch does not apply") || !strings.Contains(err.Error(), narrowPatch) {
		t.Errorf("Build(%s) alone: %v; want a patch that does not apply", narrowPatch, err)
	}
	_, err = Build("testdata/no-such.patch")
	if err == nil || !strings.Contains(err.Error(), "patch file not found") {
		t.Errorf("Build(missing patch): %v; want patch file not found", err)
	}
}

// ---------------------------------------------------------------- server ---

type server struct {
	base   string
	addr   string
	client *http.Client
	// fresh sends each request on a new connection.
	fresh   *http.Client
	stderr  *syncbuf.Buffer
	done    chan struct{}
	waitErr error
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer starts bin with PORT set to a free port and waits for its
// "listening on" line.
func startServer(t *testing.T, bin string, args []string) *server {
	t.Helper()
	port := freePort(t)
	return startServerOn(t, bin, port, args, "PORT="+strconv.Itoa(port))
}

func startServerOn(t *testing.T, bin string, port int, args []string, env ...string) *server {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "RUST_BACKTRACE=0"), env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{
		addr:   fmt.Sprintf("127.0.0.1:%d", port),
		stderr: &syncbuf.Buffer{},
		done:   make(chan struct{}),
		client: &http.Client{Timeout: 10 * time.Second},
		fresh:  &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
	}
	s.base = "http://" + s.addr
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			s.stderr.WriteString(line + "\n")
			if rest, ok := strings.CutPrefix(line, "listening on "); ok {
				select {
				case ready <- rest:
				default:
				}
			}
		}
	}()
	go func() {
		// Wait closes the pipe once the process is gone and the reader
		// above has drained it.
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		s.client.CloseIdleConnections()
		_ = cmd.Process.Kill()
		<-s.done
	})
	select {
	case got := <-ready:
		if got != s.addr {
			t.Fatalf("server says listening on %s, want %s", got, s.addr)
		}
	case <-s.done:
		t.Fatalf("server exited before it was ready: %v\n%s", s.waitErr, s.stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("server not ready after 15s\n%s", s.stderr.String())
	}
	return s
}

func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *server) request(t *testing.T, method, path, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", jsonType)
	}
	return req
}

// do sends a request and returns the response, its body read into
// resp.Body again.
func (s *server) do(t *testing.T, method, path, body string) *http.Response {
	t.Helper()
	resp, err := s.client.Do(s.request(t, method, path, body))
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", method, path, err, s.stderr.String())
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.Request.Method = method
	return resp
}

func (s *server) expect(t *testing.T, method, path, body string, status int, want string) {
	t.Helper()
	check(t, s.do(t, method, path, body), status, want)
}

// check compares a response's status and body; a non-empty JSON body must
// say so in its Content-Type.
func check(t *testing.T, resp *http.Response, status int, want string) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	what := resp.Request.Method + " " + resp.Request.URL.Path
	if resp.StatusCode != status || string(b) != want {
		t.Errorf("%s: %d %s, want %d %s", what, resp.StatusCode, b, status, want)
	}
	if want != "" && resp.Header.Get("Content-Type") != jsonType {
		t.Errorf("%s: Content-Type %q, want %s", what, resp.Header.Get("Content-Type"), jsonType)
	}
}

// expectNoResponse sends a POST on a new connection and expects no
// response at all: the server drops the connection.
func (s *server) expectNoResponse(t *testing.T, path, body string) {
	t.Helper()
	resp, err := s.fresh.Do(s.request(t, "POST", path, body))
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("POST %s %s: %d %s, want no response", path, body, resp.StatusCode, b)
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("POST %s %s: %v, want EOF (or a reset)", path, body, err)
	}
	t.Logf("POST %s %s: %v", path, body, err)
}

// raw sends one POST by hand on a new connection and returns what came back
// until the connection ended, with the error that ended it.
func (s *server) raw(t *testing.T, path, body string) ([]byte, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
		path, s.addr, jsonType, len(body), body)
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return got, err
		}
	}
}

// metrics reads /metrics into a map from series (name and labels) to value.
func (s *server) metrics(t *testing.T) map[string]int {
	t.Helper()
	resp := s.do(t, "GET", "/metrics", "")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	b, _ := io.ReadAll(resp.Body)
	m := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.Atoi(line[i+1:])
		if i < 0 || err != nil {
			t.Fatalf("GET /metrics: bad line %q", line)
		}
		m[line[:i]] = v
	}
	return m
}

// TestKeysBuildFromTheirOwnSources builds two keys in alternating order,
// each for the first time, and checks that each binary does what its
// patches say. The keys differ only in an extra file that cargo never reads
// (a nonce, so that every run builds afresh) and, for one of them, a patch
// making POST /api/v1/items answer 200: the unpatched key's sources are
// older than the patched key's build, which a target directory judged
// fresh by modification times took for up to date and answered with the
// patched binary.
func TestKeysBuildFromTheirOwnSources(t *testing.T) {
	t.Parallel()
	create200, err := filepath.Abs("testdata/create-200.patch")
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		name    string
		patches []string
		status  int
	}
	var bins []string
	for round := range 2 {
		for _, k := range []key{
			{"create-200", []string{create200}, 200},
			{"base", nil, 201},
		} {
			patches := append(k.patches, noncePatch(t, fmt.Sprintf("%s-%d", k.name, round)))
			bin := MustBuild(t, patches...)
			// Fresh keys, used by this test alone.
			t.Cleanup(func() { os.RemoveAll(filepath.Dir(bin)) })
			s := startServer(t, bin, nil)
			s.expect(t, "POST", "/api/v1/items", `{"name":"pen","price_cents":1001,"quantity":3}`, k.status,
				`{"id":1,"name":"pen","price_cents":1001,"quantity":3,"unit_price_cents":333}`)
			bins = append(bins, bin)
		}
	}
	// The two keys' binaries are not the same bytes.
	if a, b := fileSum(t, bins[0]), fileSum(t, bins[1]); a == b {
		t.Errorf("the create-200 and base builds are byte-identical (sha256 %s)", a)
	}
}

// noncePatch writes a patch that adds a file cargo never reads, with a
// content unique to this run: a build key of its own, built afresh.
func noncePatch(t *testing.T, name string) string {
	t.Helper()
	nonce := fmt.Sprintf("%s %d %d", name, os.Getpid(), time.Now().UnixNano())
	p := filepath.Join(t.TempDir(), name+".patch")
	text := "--- /dev/null\n+++ b/nonce.txt\n@@ -0,0 +1 @@\n+" + nonce + "\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}
