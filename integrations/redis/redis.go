package redis

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	textcut "github.com/kavach-dev/kavach/internal/cut"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/launch"
)

// Protocol is the protocol name in fixtures.
const Protocol = "resp"

// SplitRequest frames one command: a RESP array of bulk strings, or an
// inline command line.
func (Integration) SplitRequest(data []byte) (int, error) { return Split(data) }

// SplitResponse frames one reply. A server never sends inline text, so
// bytes that do not start with a RESP type byte are a protocol error.
func (Integration) SplitResponse(data []byte) (int, error) {
	if len(data) > 0 && !isType(data[0]) {
		return 0, &ProtocolError{Offset: 0, Reason: "reply does not start with a RESP type byte", Bytes: bytes.Clone(data[:min(len(data), 64)])}
	}
	return Split(data)
}

// Replies is the number of replies a command gets: one per channel for
// (P|S)SUBSCRIBE and for (P|S)UNSUBSCRIBE with channels, else one.
// (UNSUBSCRIBE with no channels gets one reply per subscribed channel;
// the replies past the first are attached to it as pushes.)
func (Integration) Replies(request []byte) int {
	if name, ok := peekName(request); ok && !nameIn(name, "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE") {
		return 1 // the common case, decided without parsing the arguments
	}
	c, err := ParseCommand(request)
	if err != nil {
		return 1
	}
	switch c.Name {
	case "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE":
		if len(c.Args) > 1 {
			return len(c.Args) - 1
		}
	case "":
		return 0 // an empty inline line: the server answers nothing
	}
	return 1
}

// IsPush reports whether a reply is unsolicited: a pub/sub message
// (message, pmessage, smessage), a client-side-caching invalidation, or an
// unsubscribe confirmation no request asked for.
//
// Only the first element is read: a large reply (COMMAND DOCS, about 200
// KB) is not parsed to tell it is no push.
func (Integration) IsPush(response []byte) bool {
	if len(response) == 0 || (response[0] != '*' && response[0] != '>') {
		return false
	}
	i := bytes.IndexByte(response, '\n')
	if i < 0 || i+1 >= len(response) || response[i+1] != '$' {
		return false // an empty or null array, or a first element that is no bulk string
	}
	rest := response[i+1:]
	n, err := Split(rest)
	if err != nil || n == 0 {
		return false
	}
	first, err := Parse(rest[:n])
	if err != nil {
		return false
	}
	switch strings.ToLower(string(first.Str)) {
	case "message", "pmessage", "smessage", "invalidate":
		return true
	}
	return false
}

// DescribeRequest renders a command like `SET "k" "v"`.
func (Integration) DescribeRequest(msg []byte, max int) string {
	c, err := ParseCommand(msg)
	if err != nil {
		return cut(fmt.Sprintf("(unparsable) %q", msg), max)
	}
	return cut(c.String(), max)
}

// DescribeResponse renders a reply like redis-cli: `"OK"`, `(integer) 1`.
func (Integration) DescribeResponse(msg []byte, max int) string {
	v, err := Parse(msg)
	if err != nil {
		return cut(fmt.Sprintf("(unparsable) %q", msg), max)
	}
	return cut(v.String(), max)
}

// cut shortens a description to max bytes (cut.String); a max of 0 or
// less keeps it whole.
func cut(s string, max int) string {
	if max <= 0 {
		return s
	}
	return textcut.String(s, max)
}

// Classify is OK unless the first reply that is not a push is an error
// (simple or bulk); the class is the error's first word (ERR, WRONGTYPE).
func (c Integration) Classify(request []byte, responses [][]byte) kavach.Outcome {
	for _, r := range responses {
		if c.IsPush(r) {
			continue
		}
		if len(r) > 0 && isType(r[0]) && r[0] != '-' && r[0] != '!' && r[0] != '|' {
			// No error, no attribute before one: ok. (Responses come
			// framed by SplitResponse: a whole frame.)
			return kavach.Outcome{Kind: kavach.OK}
		}
		v, err := Parse(r)
		if err != nil {
			return kavach.Outcome{Kind: kavach.Error, Class: "PROTOCOL", Detail: err.Error()}
		}
		if v.Kind == KindError || v.Kind == KindBulkError {
			class, _, _ := strings.Cut(string(v.Str), " ")
			return kavach.Outcome{Kind: kavach.Error, Class: class, Detail: cut(string(v.Str), 200)}
		}
		return kavach.Outcome{Kind: kavach.OK}
	}
	return kavach.Outcome{Kind: kavach.OK}
}

// Redacted is what a secret argument is replaced with.
const Redacted = "<redacted>"

// Redact replaces passwords in AUTH, HELLO ... AUTH, MIGRATE ... AUTH and
// AUTH2, CONFIG SET requirepass/masterauth, and ACL SETUSER password
// rules (>pass, <pass, #hash, !hash), and re-encodes the command as an
// array of bulk strings. The note names what was replaced.
func (Integration) Redact(request []byte) ([]byte, string) {
	if name, ok := peekName(request); ok && !nameIn(name, "AUTH", "HELLO", "MIGRATE", "CONFIG", "ACL") {
		return request, "" // no secret in this command: decided without parsing it
	}
	c, err := ParseCommand(request)
	if err != nil || len(c.Args) < 2 {
		return request, ""
	}
	args := c.Args
	hide, what := secretArgs(c)
	if len(hide) == 0 {
		return request, ""
	}
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = a
		if hide[i] {
			if len(a) > 0 && strings.IndexByte("><#!", a[0]) >= 0 && c.Name == "ACL" {
				out[i] = append([]byte{a[0]}, Redacted...)
			} else {
				out[i] = []byte(Redacted)
			}
		}
	}
	return AppendCommand(nil, out...), strings.Join(what, ", ")
}

// secretArgs says which arguments of a command are secrets (by index) and
// what they are, for the note.
func secretArgs(c Command) (map[int]bool, []string) {
	args := c.Args
	hide := map[int]bool{}
	var what []string
	if len(args) < 2 {
		return hide, nil
	}
	switch c.Name {
	case "AUTH":
		hide[len(args)-1] = true // AUTH pass, or AUTH user pass
		what = append(what, "AUTH password")
	case "HELLO":
		// HELLO [protover [AUTH username password] [SETNAME name]], read
		// as Redis reads it: SETNAME's value is a name, never a password.
		for i := 2; i < len(args); {
			switch {
			case strings.EqualFold(string(args[i]), "AUTH") && i+2 < len(args):
				hide[i+2] = true
				what = append(what, "HELLO AUTH password")
				i += 3
			case strings.EqualFold(string(args[i]), "SETNAME") && i+1 < len(args):
				i += 2
			default:
				i++
			}
		}
	case "MIGRATE":
		// MIGRATE host port key db timeout [COPY] [REPLACE] [AUTH pw]
		// [AUTH2 user pw] [KEYS key...]: what follows KEYS are keys.
	options:
		for i := 6; i < len(args); {
			switch strings.ToUpper(string(args[i])) {
			case "AUTH":
				if i+1 < len(args) {
					hide[i+1] = true
					what = append(what, "MIGRATE AUTH password")
				}
				i += 2
			case "AUTH2":
				if i+2 < len(args) {
					hide[i+2] = true
					what = append(what, "MIGRATE AUTH2 password")
				}
				i += 3
			case "KEYS":
				break options
			default:
				i++
			}
		}
	case "CONFIG":
		if strings.EqualFold(string(args[1]), "SET") {
			for i := 2; i+1 < len(args); i += 2 {
				if p := strings.ToLower(string(args[i])); p == "requirepass" || p == "masterauth" {
					hide[i+1] = true
					what = append(what, "CONFIG SET "+p)
				}
			}
		}
	case "ACL":
		if strings.EqualFold(string(args[1]), "SETUSER") {
			for i := 3; i < len(args); i++ {
				if a := args[i]; len(a) > 1 && strings.IndexByte("><#!", a[0]) >= 0 {
					hide[i] = true
					what = append(what, "ACL SETUSER password rule")
				}
			}
		}
	}
	return hide, what
}

// Unredact puts secret back where Redact left Redacted as a credential the
// client presented to the build: the password of AUTH and of HELLO ...
// AUTH. Anywhere else (ECHO <redacted>, a key, a value, CONFIG SET
// requirepass, an ACL rule) Redacted stays a literal: a fixture cannot make
// a replay write the operator's secret where it can be read back. Nor does
// MIGRATE ... AUTH/AUTH2 get it: that password is for the target instance,
// which in a replay is whatever host the fixture names, never the build.
// Requests without the marker are returned unchanged.
func Unredact(request []byte, secret string) []byte {
	if !bytes.Contains(request, []byte(Redacted)) {
		return request
	}
	if name, ok := peekName(request); ok && !nameIn(name, "AUTH", "HELLO") {
		return request
	}
	c, err := ParseCommand(request)
	if err != nil || !nameIn([]byte(c.Name), "AUTH", "HELLO") {
		return request
	}
	hide, _ := secretArgs(c)
	changed := false
	out := make([][]byte, len(c.Args))
	for i, a := range c.Args {
		out[i] = a
		if hide[i] && string(a) == Redacted {
			out[i], changed = []byte(secret), true
		}
	}
	if !changed {
		return request
	}
	return AppendCommand(nil, out...)
}

// fastCrash, before the launch's own arguments, turns off the memory
// test Redis runs when it crashes: about
// 150 ms of CPU per crash, which replays of a crashing incident pay for
// every variant. Builds before Redis 6.2 do not know the option; they are
// started again without it.
var fastCrash = []string{"--crash-memcheck-enabled", "no"}

// Start starts a build and waits until it is ready (see Integration);
// the build is stopped once ctx is done.
func (in Integration) Start(ctx context.Context, build kavach.Launch) (kavach.Process, error) {
	if in.Secret != "" {
		build.Args = UnredactArgs(build.Args, in.Secret)
	}
	p, err := in.start(ctx, build)
	var se *launch.StartError
	if in.Secret != "" && errors.As(err, &se) && se.Exit != nil && strings.Contains(se.Exit.LogTail, in.Secret) {
		exit := *se.Exit
		exit.LogTail = strings.ReplaceAll(exit.LogTail, in.Secret, Redacted)
		err = &launch.StartError{Path: se.Path, Reason: se.Reason, Exit: &exit}
	}
	return p, err
}

func (in Integration) start(ctx context.Context, build kavach.Launch) (kavach.Process, error) {
	sp := in.spawn(build)
	sp.Defaults = fastCrash
	p, err := sp.Start(ctx)
	var se *launch.StartError
	if errors.As(err, &se) && se.Exit != nil && strings.Contains(se.Exit.LogTail, "crash-memcheck-enabled") {
		p, err = in.spawn(build).Start(ctx)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (in Integration) spawn(build kavach.Launch) launch.Spawn {
	safety := SafetyArgs
	if build.Data != "" {
		// The data file is loaded from its name whatever the launch says.
		safety = append(slices.Clone(SafetyArgs), "--dbfilename", DataFile)
	}
	return launch.Spawn{
		Launch:       build,
		Safety:       safety,
		DataFile:     DataFile,
		Shared:       SharedArgs,
		Env:          in.Env,
		StartTimeout: in.StartTimeout,
		ReadyPid:     ready,
		Shutdown: func(addr string) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			call(ctx, addr, "SHUTDOWN", "NOSAVE")
		},
	}
}

// ready is ready when the port accepts a connection (closed at once,
// nothing sent) and the server's main thread sleeps in epoll_wait: it has
// finished starting and waits for work. A build that deadlocks while
// starting never gets there.
// Neither probe is a request the server counts: command statistics, the
// keyspace and client lists are as if Kavach had not looked (only the
// number of connections received moves, in INFO, which replays do not
// compare).
func ready(ctx context.Context, addr string, pid int) error {
	c, err := launch.Dial(ctx, addr)
	if err != nil {
		return err
	}
	c.Close()
	// The connection woke it: look again for a few milliseconds.
	for range 20 {
		if launch.InEventLoop(pid) {
			return nil
		}
		time.Sleep(250 * time.Microsecond)
	}
	return errors.New("accepts connections, but is not yet waiting in its event loop")
}

// Identify runs the build with --version, not the running server (which
// would count an INFO): "redis 7.0.15", "valkey 8.0.1"; "" if it does not
// say. The answer is kept per executable (path, size, time of change).
func (Integration) Identify(ctx context.Context, l kavach.Launch) string {
	st, err := os.Stat(l.Path)
	if err != nil {
		return ""
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", l.Path, st.Size(), st.ModTime().UnixNano())
	if v, ok := identities.Load(key); ok {
		return v.(string)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, l.Path, "--version").Output()
	v := parseVersion(string(out))
	if ctx.Err() == nil {
		identities.Store(key, v)
	}
	return v
}

var identities sync.Map // Identify's answers

// parseVersion reads "Redis server v=7.0.15 sha=..." (or "Valkey server
// v=8.0.1 ...") as "redis 7.0.15".
func parseVersion(out string) string {
	name, rest, ok := strings.Cut(strings.TrimSpace(out), " server v=")
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, " ")
	return strings.ToLower(name) + " " + v
}

// Version reads redis_version (or valkey_version) from INFO server:
// "redis 7.0.15", "valkey 8.0.1"; "" if the build does not say.
func (Integration) Version(ctx context.Context, addr string) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	v, err := call(ctx, addr, "INFO", "server")
	if err != nil {
		return ""
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(v.Str), "\n") {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = val
		}
	}
	if val := fields["valkey_version"]; val != "" {
		return "valkey " + val
	}
	if val := fields["redis_version"]; val != "" {
		return "redis " + val
	}
	return ""
}

// call sends one command on a new connection and reads one reply.
func call(ctx context.Context, addr string, args ...string) (Value, error) {
	conn, err := launch.Dial(ctx, addr)
	if err != nil {
		return Value{}, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	if _, err := conn.Write(AppendCommand(nil, b...)); err != nil {
		return Value{}, err
	}
	return readReply(bufio.NewReader(conn))
}

// readReply reads one whole reply from r.
func readReply(r *bufio.Reader) (Value, error) {
	var buf []byte
	chunk := make([]byte, 16<<10)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if m, serr := Split(buf); serr != nil {
			return Value{}, serr
		} else if m > 0 {
			return Parse(buf[:m])
		}
		if err != nil {
			return Value{}, err
		}
	}
}

// peekName returns the command name of a request in array form (the
// first bulk string) without parsing the rest or allocating; ok is false
// for anything else (inline commands, odd frames), which callers then
// parse in full.
func peekName(frame []byte) (name []byte, ok bool) {
	if len(frame) < 4 || frame[0] != '*' {
		return nil, false
	}
	i := bytes.IndexByte(frame, '\n')
	if i < 0 || i+1 >= len(frame) || frame[i+1] != '$' {
		return nil, false
	}
	rest := frame[i+2:]
	j := bytes.IndexByte(rest, '\r')
	if j <= 0 || j+1 >= len(rest) || rest[j+1] != '\n' {
		return nil, false
	}
	n := 0
	for _, c := range rest[:j] {
		if c < '0' || c > '9' || n > 1<<20 {
			return nil, false
		}
		n = n*10 + int(c-'0')
	}
	start := j + 2
	if start+n > len(rest) {
		return nil, false
	}
	return rest[start : start+n], true
}

// nameIn says whether name is one of names, ignoring ASCII case as the
// server does when it looks a command up (names are ASCII upper case).
func nameIn(name []byte, names ...string) bool {
	for _, n := range names {
		if asciiEqualUpper(name, n) {
			return true
		}
	}
	return false
}

// asciiEqualUpper says whether b is upper, an ASCII upper-case word, in
// any ASCII case: no Unicode folding (the server has none), and a length
// told apart before any byte is looked at, which is most of the calls.
func asciiEqualUpper(b []byte, upper string) bool {
	if len(b) != len(upper) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}
