package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/axumbuild"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/internal/syncbuf"
)

// recording is `kavach record` running in this process.
type recording struct {
	fixture string
	addr    string
	cancel  context.CancelFunc
	done    chan int
	stderr  *syncbuf.Buffer
}

// startRecording runs kavach record with args (after --protocol, --out and
// --ready-file) and waits for its address.
func startRecordingCmd(t *testing.T, protocol string, args ...string) *recording {
	t.Helper()
	dir := t.TempDir()
	r := &recording{fixture: filepath.Join(dir, "secrets.kavach"), done: make(chan int, 1), stderr: &syncbuf.Buffer{}}
	ready := filepath.Join(dir, "addr")
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	argv := append([]string{"kavach", "record", "--protocol", protocol, "--out", r.fixture, "--ready-file", ready}, args...)
	go func() { r.done <- run(ctx, argv, nil, io.Discard, r.stderr) }()
	t.Cleanup(func() { r.stop(t) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(ready); err == nil {
			r.addr = strings.TrimSpace(string(b))
			return r
		}
		select {
		case code := <-r.done:
			r.done <- code
			t.Fatalf("kavach record exited %d before it was ready:\n%s", code, r.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("kavach record not ready after 30s:\n%s", r.stderr)
		}
	}
}

// stop ends the recording as Ctrl-C does and waits for it.
func (r *recording) stop(t *testing.T) {
	r.cancel()
	code := <-r.done
	r.done <- code
	if code != 0 {
		t.Errorf("kavach record exited %d:\n%s", code, r.stderr)
	}
}

// assertNoSecret decompresses the fixture with zstd -dc, as a person
// would, and fails if any secret appears in it or in its raw bytes.
func assertNoSecret(t *testing.T, fixture string, secrets map[string]string) []byte {
	t.Helper()
	plain, err := exec.Command("zstd", "-dc", fixture).Output()
	if err != nil {
		t.Fatalf("zstd -dc %s: %v", fixture, err)
	}
	raw, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	for what, s := range secrets {
		if bytes.Contains(plain, []byte(s)) || bytes.Contains(raw, []byte(s)) {
			i := bytes.Index(plain, []byte(s))
			t.Errorf("the fixture holds the %s %q (decompressed, near: %q)", what, s, plain[max(0, i-80):min(len(plain), i+80)])
		}
	}
	if !bytes.Contains(plain, []byte("<redacted>")) {
		t.Errorf("no <redacted> in the fixture: nothing was redacted")
	}
	return plain
}

func sha256hex(s string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(s))) }

// TestSecretCorpusRedis records secret-bearing traffic through the real
// proxy in front of a real redis-server started with a password: no
// planted secret reaches the fixture, and the fixture replays with
// KAVACH_REDIS_SECRET.
func TestSecretCorpusRedis(t *testing.T) {
	build := redisbuild.MustBuild(t)
	const (
		pw      = "planted-requirepass-7f3a"
		master  = "planted-masterauth-42c8"
		alice   = "planted-alice-pw-9c1e"
		badHash = "planted-bad-hash-5e1d"
		rawPw   = "planted-raw-pw-77aa"
	)
	secrets := map[string]string{
		"password": pw, "masterauth": master, "ACL password": alice, "ACL hash rule": badHash,
		"password after unframable bytes": rawPw,
		"password hash":                   sha256hex(pw), "ACL password hash": sha256hex(alice),
	}
	rec := startRecordingCmd(t, "resp", "--", build, "--requirepass", pw)
	send, command, closeConn := respConn(t, rec.addr)
	defer closeConn()
	expect := func(got, want string) {
		t.Helper()
		if !strings.Contains(got, want) {
			t.Errorf("reply %q, want it to hold %q", got, want)
		}
	}
	expect(command("AUTH", pw), "+OK")
	expect(command("CONFIG", "GET", "requirepass"), pw)
	expect(command("CONFIG", "SET", "masterauth", master), "+OK")
	expect(command("CONFIG", "GET", "*auth*"), master)
	expect(command("CONFIG", "GET", "*pass*"), pw)
	expect(command("ACL", "SETUSER", "alice", "on", ">"+alice, "~*", "+@all"), "+OK")
	expect(command("ACL", "SETUSER", "bob", "#"+badHash), badHash) // the error echoes the rule
	expect(command("ACL", "LIST"), sha256hex(alice))
	expect(command("ACL", "GETUSER", "alice"), sha256hex(alice))
	// Bytes the codec cannot frame, which Redis answers and goes on.
	expect(send("$-5\r\n"), "-ERR unknown command")
	expect(command("AUTH", pw), "+OK")
	expect(send("$-5 AUTH "+rawPw+"\r\n"), rawPw) // the error echoes the arguments
	expect(send("AUTH default "+pw+"\r\n"), "+OK")
	// RESP3: maps.
	expect(command("HELLO", "3", "AUTH", "default", pw), "proto")
	expect(command("CONFIG", "GET", "requirepass"), pw)
	expect(command("CONFIG", "GET", "masterauth"), master)
	expect(command("ACL", "GETUSER", "alice"), sha256hex(alice))
	expect(command("ACL", "LIST"), sha256hex(pw))
	expect(command("PING"), "PONG")
	closeConn()
	rec.stop(t)

	plain := assertNoSecret(t, rec.fixture, secrets)
	fx, err := fixtures.Load(rec.fixture)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Header.Launch == nil || strings.Join(fx.Header.Launch.Args, " ") != "--requirepass <redacted>" {
		t.Errorf("launch arguments in the header: %+v", fx.Header.Launch)
	}
	t.Logf("%d redactions, %d bytes decompressed", len(fx.Redactions), len(plain))

	// The fixture replays: the secret is put back from the environment,
	// in the launch arguments and the requests, and replies holding it
	// compare as they were written.
	t.Setenv("KAVACH_REDIS_SECRET", pw)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"kavach", "replay", build, rec.fixture}, nil, &stdout, &stderr); code != 0 {
		t.Errorf("kavach replay exited %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "result    reproduced") {
		t.Errorf("replay:\n%s", stdout.String())
	}
}

// TestSecretCorpusHTTP records secret-bearing requests to the axum service
// through the real proxy: headers, query parameters (the defaults and one
// added with --redact-param), and a header spelled with a space before its
// colon, which the codec cannot frame.
func TestSecretCorpusHTTP(t *testing.T) {
	build := axumbuild.MustBuild(t)
	secrets := map[string]string{
		"bearer token": "planted-bearer-1a2b", "cookie": "planted-cookie-3c4d", "api key header": "planted-xapikey-5e6f",
		"token parameter": "planted-token-7a8b", "api_key parameter": "planted-apikey-9c0d",
		"access_token parameter": "planted-access-1e2f", "added parameter": "planted-session-3a4b",
		"spaced Authorization": "planted-spaced-5c6d", "spaced cookie": "planted-spaced-cookie-7e8f",
		"X-Auth-Token header": "planted-xauth-9a8b", "password parameter": "planted-pwparam-7c6d",
		"secret parameter": "planted-secretparam-5e4f", "session_token parameter": "planted-sesstok-3a2b",
		"JSON password": "planted-jsonpw-1c0d", "JSON token": "planted-jsontok-8e9f", "added JSON member": "planted-pin-6a7b",
	}
	rec := startRecordingCmd(t, "http", "--redact-param", "session_key", "--redact", "pin", "--", build, "--port", "{port}")
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string, headers map[string]string) {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+rec.addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d", path, resp.StatusCode)
		}
	}
	get("/health", map[string]string{"Authorization": "Bearer " + secrets["bearer token"], "Cookie": "sid=" + secrets["cookie"],
		"X-Api-Key": secrets["api key header"]})
	get("/api/v1/items?token="+secrets["token parameter"]+"&api_key="+secrets["api_key parameter"], nil)
	get("/api/v1/items?page=1&access_token="+secrets["access_token parameter"]+"&session_key="+secrets["added parameter"], nil)
	get("/api/v1/items?password="+secrets["password parameter"]+"&secret="+secrets["secret parameter"]+
		"&session_token="+secrets["session_token parameter"], map[string]string{"X-Auth-Token": secrets["X-Auth-Token header"]})
	body := `{"name":"widget","price_cents":100,"quantity":1,"password":"` + secrets["JSON password"] + `","meta":{"token":"` + secrets["JSON token"] + `","pin":"` + secrets["added JSON member"] + `"}}`
	resp, err := client.Post("http://"+rec.addr+"/api/v1/items", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections()

	// A space before the colon: not HTTP/1.1 to the codec (nor to the
	// service, which answers 400 and closes).
	conn, err := net.DialTimeout("tcp", rec.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET /health HTTP/1.1\r\nHost: x\r\nAuthorization : Bearer %s\r\nCookie : sid=%s\r\n\r\n",
		secrets["spaced Authorization"], secrets["spaced cookie"])
	reply, _ := io.ReadAll(conn)
	conn.Close()
	if !bytes.HasPrefix(reply, []byte("HTTP/1.1 400")) {
		t.Errorf("the service answered the spaced header with %q, want a 400", reply)
	}
	rec.stop(t)
	assertNoSecret(t, rec.fixture, secrets)

	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"kavach", "replay", build, rec.fixture}, nil, &stdout, &stderr); code != 0 {
		t.Errorf("kavach replay exited %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
}

// TestSeenSecretRedactedEverywhere records, through the real proxy in
// front of a real redis-server started with a password, clients that
// authenticate (AUTH, HELLO ... AUTH), give a user a password (ACL
// SETUSER) and later send those passwords as data: ECHO, a value holding
// one (SET, GET), on the connection that presented it and on another; and
// a value holding the KAVACH_REDIS_SECRET the recorder was run with. No
// password is anywhere in the fixture, and a replay of it on the same
// build (KAVACH_REDIS_SECRET set) finds every step as recorded.
func TestSeenSecretRedactedEverywhere(t *testing.T) {
	build := redisbuild.MustBuild(t)
	const (
		pw        = "planted-seen-pw-6b2e"
		alicePw   = "planted-seen-alice-3d9f"
		envSecret = "planted-seen-env-8a1c"
	)
	t.Setenv("KAVACH_REDIS_SECRET", envSecret)
	rec := startRecordingCmd(t, "resp", "--", build, "--requirepass", pw)
	dial := func() (func(args ...string) string, func()) {
		_, command, closeConn := respConn(t, rec.addr)
		return command, closeConn
	}
	expect := func(got, want string) {
		t.Helper()
		if !strings.Contains(got, want) {
			t.Errorf("reply %q, want it to hold %q", got, want)
		}
	}
	// The service answers with the passwords: only the redaction keeps
	// them out of the fixture.
	first, closeFirst := dial()
	expect(first("AUTH", pw), "+OK")
	expect(first("ECHO", pw), pw)
	expect(first("SET", "greeting", "hello "+pw+"!"), "+OK")
	expect(first("GET", "greeting"), "hello "+pw+"!")
	expect(first("ACL", "SETUSER", "alice", "on", ">"+alicePw, "~*", "+@all"), "+OK")
	expect(first("SET", "env", "y"+envSecret), "+OK")
	expect(first("GET", "env"), "y"+envSecret)
	closeFirst()
	// Another connection: alice's password was seen on the first only.
	second, closeSecond := dial()
	expect(second("HELLO", "3", "AUTH", "default", pw), "proto")
	expect(second("ECHO", alicePw), alicePw)
	expect(second("SET", "k2", "x"+alicePw+"x"), "+OK")
	expect(second("GET", "k2"), "x"+alicePw+"x")
	expect(second("GETRANGE", "greeting", "0", "4"), "hello")
	closeSecond()
	rec.stop(t)

	plain := assertNoSecret(t, rec.fixture, map[string]string{"password": pw, "ACL password": alicePw, "KAVACH_REDIS_SECRET": envSecret})
	for _, want := range []string{"hello <redacted>!", "x<redacted>x", "y<redacted>"} {
		if !bytes.Contains(plain, []byte(want)) {
			t.Errorf("the fixture lacks %q: the value around the secret was not kept", want)
		}
	}

	t.Setenv("KAVACH_REDIS_SECRET", pw)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"kavach", "replay", build, rec.fixture}, nil, &stdout, &stderr)
	t.Logf("kavach replay: exit %d\n%s%s", code, stdout.String(), stderr.String())
	if code != 0 || !strings.Contains(stdout.String(), "result    reproduced (12 equal)\n") {
		t.Errorf("kavach replay exited %d, want every step equal:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	// The steps whose request or reply was redacted, each as recorded.
	for _, step := range []string{`2     equal   ok        ok        ECHO "<redacted>"`,
		`3     equal   ok        ok        SET "greeting" "hello <redacted>!"`,
		`4     equal   ok        ok        GET "greeting"`,
		`7     equal   ok        ok        GET "env"`,
		`9     equal   ok        ok        ECHO "<redacted>"`,
		`11    equal   ok        ok        GET "k2"`} {
		if !strings.Contains(stdout.String(), "\n"+step+"\n") {
			t.Errorf("kavach replay lacks the line %q", step)
		}
	}
}

// respConn is a connection to addr: send writes raw bytes and reads one
// reply, command sends a command and reads its reply.
func respConn(t *testing.T, addr string) (send func(req string) string, command func(args ...string) string, closeConn func()) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	var pending []byte
	send = func(req string) string {
		t.Helper()
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64<<10)
		for {
			if n, err := redis.Split(pending); err == nil && n > 0 {
				reply := string(pending[:n])
				pending = pending[n:]
				return reply
			}
			n, err := conn.Read(buf)
			pending = append(pending, buf[:n]...)
			if err != nil {
				t.Fatalf("%q: %v (read %q)", req, err, pending)
			}
		}
	}
	command = func(args ...string) string {
		t.Helper()
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		return send(string(redis.AppendCommand(nil, b...)))
	}
	return send, command, func() { conn.Close() }
}
