// Package incidents holds the incidents Kavach's own tests record on
// real builds with planted faults: the client session of each, driven
// through kavach's recording proxy in front of the old build.
package incidents

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/record"
)

// Patches is the folder of the planted-fault patches for Redis.
func Patches() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "redisbuild", "testdata")
}

// Getrange builds: the old build lost the clamp of a negative GETRANGE
// start to 0, and an assertion kills it; the candidate fixes.
var (
	GetrangeOld    = []string{"getrange-crash.patch"}                     // the planted bug
	GetrangeNarrow = []string{"getrange-crash.patch", "fix-narrow.patch"} // handles only the incident's exact input
	StrlenBroken   = []string{"strlen-off-by-one.patch"}                  // fixes GETRANGE, breaks STRLEN
	// GetrangeOffByOne restores the clamp but shifts every positive start
	// by one: the incident passes, a mutated earlier GETRANGE does not.
	GetrangeOffByOne = []string{"getrange-crash.patch", "fix-breaks-positive-start.patch"}
	// GetrangeLongStringsOnly restores the clamp only for strings of 11
	// bytes or more (the incident's SET value): every variant of the
	// failing request passes, a shorter string left by the earlier writes
	// (the SET dropped, or varied to write another key or value) still
	// kills it.
	GetrangeLongStringsOnly = []string{"getrange-crash.patch", "fix-long-strings-only.patch"}
	// EchoOld crashes on ECHO boom: an incident of one step with one
	// argument, too narrow to vary.
	EchoOld = []string{"echo-boom-crash.patch"}
)

// Getrange is the GETRANGE incident's client session: SET, APPEND,
// STRLEN, a GETRANGE that works, and GETRANGE greeting -100 -1, which
// kills the old build (step 5, a crash).
var Getrange = [][]string{
	{"SET", "greeting", "hello world"},
	{"APPEND", "greeting", "!"},
	{"STRLEN", "greeting"},
	{"GETRANGE", "greeting", "0", "4"},
	{"GETRANGE", "greeting", "-100", "-1"},
}

// Echo is the ECHO incident's session: one command that kills the old build.
var Echo = [][]string{{"ECHO", "boom"}}

// The STRLEN incident is a wrong answer, not a crash: the old build counts
// strings longer than 16 bytes one short. Only an invariant sees it.
var (
	StrlenOld        = []string{"strlen-long-short.patch"}  // the planted bug
	StrlenShortWrong = []string{"strlen-short-wrong.patch"} // fixes long strings, breaks short ones
)

// Strlen is the STRLEN incident's session. Step 6 answers 23 for a value
// of 24 bytes; steps 7 and 8 come after the failure.
var Strlen = [][]string{
	{"SET", "greeting", "hello"},
	{"STRLEN", "greeting"},
	{"SET", "greeting", "hello world, how are you"},
	{"GET", "greeting"},
	{"EXPIRE", "greeting", "1000000"}, // longer than any clock variant
	{"STRLEN", "greeting"},
	{"SET", "tag", "ab"},
	{"STRLEN", "tag"},
}

// StrlenInvariants declares what a right STRLEN answer is.
const StrlenInvariants = `# STRLEN answers the length of the value last SET on the key.
name: strlen-matches
description: STRLEN is the length of the value last SET
when: req.command == "STRLEN" && lastSet(req.args[0]) != null
check: reply == size(lastSet(req.args[0]))
`

// StrlenThenRead is the STRLEN incident with a later read of the key the
// failing STRLEN read: step 9, GETRANGE greeting 1 3 ("ell"). The fix
// changes the failing read's answer and no state, so it explains no
// change of step 9's.
var StrlenThenRead = append(slices.Clone(Strlen), []string{"GETRANGE", "greeting", "1", "3"})

// RecordStrlen records the STRLEN incident into out on the old build,
// embeds StrlenInvariants and marks step 6 as failing strlen-matches.
func RecordStrlen(out, old string) error { return recordStrlen(out, old, Strlen) }

// RecordStrlenThenRead records StrlenThenRead as RecordStrlen does.
func RecordStrlenThenRead(out, old string) error { return recordStrlen(out, old, StrlenThenRead) }

// recordStrlen records a session starting as Strlen does, with its
// failure at step 6.
func recordStrlen(out, old string, session [][]string) error {
	if err := RecordSession(out, old, session); err != nil {
		return err
	}
	f := kavach.Failure{Step: 6, Oracle: kavach.Oracle{Invariant: "strlen-matches"}, Signature: "invariant:strlen-matches",
		Evidence: "STRLEN answered 23 for a 24-byte value"}
	return fixtures.Amend(out, fixtures.Amendment{Failure: &f,
		Invariants: &fixtures.Invariants{Name: "strlen.invariants", Source: StrlenInvariants}})
}

// RecordSession records a session that does not kill the old build: the
// commands on one connection, then the recording stopped as Ctrl-C would.
func RecordSession(out, old string, session [][]string) error {
	return recordRedis(out, old, session, false)
}

// send sends one command and reads its reply line (and a bulk string's
// payload line).
func send(conn net.Conn, r *bufio.Reader, args ...string) (string, error) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	conn.Write(redis.AppendCommand(nil, b...))
	line, err := r.ReadString('\n')
	if strings.HasPrefix(line, "$") && line != "$-1\r\n" {
		rest, _ := r.ReadString('\n')
		line += rest
	}
	return line, err
}

// PatchPaths turns patch names into paths.
func PatchPaths(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(Patches(), n)
	}
	return out
}

// RecordGetrange records the GETRANGE incident into out on the old build.
func RecordGetrange(out, old string) error { return Record(out, old, Getrange) }

// Record records a session into out, with the old build started by the
// recording session itself: each command sent on one connection, its reply
// awaited; the last command must kill the old build.
func Record(out, old string, session [][]string) error {
	return recordRedis(out, old, session, true)
}

// recordRedis records session on one connection through the proxy in
// front of the old build. With kills, the last command must kill the
// build, which ends the recording; else every command must be answered
// and the recording is then stopped.
func recordRedis(out, old string, session [][]string, kills bool) error {
	rec, err := start(out, old)
	if err != nil {
		return err
	}
	conn, err := net.Dial("tcp", rec.Addr)
	if err != nil {
		rec.Stop()
		return err
	}
	r := bufio.NewReader(conn)
	last := len(session)
	if kills {
		last--
	}
	for _, c := range session[:last] {
		if _, err := send(conn, r, c...); err != nil && !kills {
			conn.Close()
			rec.Stop()
			return fmt.Errorf("%v: %w", c, err)
		}
	}
	if !kills {
		conn.Close()
		time.Sleep(50 * time.Millisecond) // the close reaches the proxy
		_, err = rec.Stop()
		return err
	}
	reply, err := send(conn, r, session[last]...)
	conn.Close()
	if err == nil {
		rec.Stop()
		return fmt.Errorf("the old build %s answered the incident's last command (%q): the planted bug is not there", old, reply)
	}
	_, err = rec.Wait(20 * time.Second)
	return err
}

// start starts a recording into out with the old Redis build launched by it.
func start(out, old string) (*record.Running, error) {
	s := record.Session{Out: out, Launch: &kavach.Launch{Path: old},
		Proxy: record.Options{Codec: redis.Integration{}}}
	return s.Go(context.Background(), redis.Protocol)
}

// The INCRBY incident is an error reply, not a crash: the old build
// refuses negative increments with "ERR negative increment not allowed".
// Its variants meet other ERR replies too (a huge number: "value is not
// an integer or out of range"; a removed argument: "wrong number of
// arguments"), which both builds give: only the masked message tells them
// from the failure.
var (
	IncrbyOld    = []string{"incrby-negative-error.patch"}                            // the planted bug
	IncrbyNarrow = []string{"incrby-negative-error.patch", "incrby-fix-narrow.patch"} // allows only the incident's -3
	// IncrbyStringsOnly lifts the refusal for string and missing keys
	// only: on a key of another type it still refuses, where the correct
	// fix answers WRONGTYPE. Only a variant on a key of another type sees it.
	IncrbyStringsOnly = []string{"incrby-negative-error.patch", "incrby-fix-strings-only.patch"}
	// IncrbyStrlen fixes INCRBY (the pristine source) and breaks STRLEN,
	// which the incident uses only after the failure.
	IncrbyStrlen = []string{"strlen-off-by-one.patch"}
)

// Incrby is the INCRBY incident's session. Step 4 fails; step 6 reads a
// key no changed step touches; step 7 reads the key the fix changes.
var Incrby = [][]string{
	{"SET", "counter", "10"},
	{"INCRBY", "counter", "5"},
	{"GET", "counter"},
	{"INCRBY", "counter", "-3"},
	{"SET", "other", "hello"},
	{"STRLEN", "other"},
	{"GET", "counter"},
}

// The SET expire incident: the old build refuses every SET with an
// expire ("ERR expires are not allowed"; a message of its own, which no
// correct build gives for a bad expire).
var (
	SetExpireOld = []string{"set-expire-refused.patch"} // the planted bug
	// SetExpireWithoutGet lifts the refusal only where GET is not given:
	// the incident never used GET, so only a variant that adds the
	// optional flag the grammar allows sees it.
	SetExpireWithoutGet = []string{"set-expire-refused.patch", "set-expire-fix-without-get.patch"}
)

// SetExpire is the SET expire incident's session. Step 2 fails.
var SetExpire = [][]string{
	{"SET", "greeting", "hello"},
	{"SET", "greeting", "hello world", "EX", "100"},
	{"GET", "greeting"},
	{"STRLEN", "greeting"},
}

// RecordSetExpire records the SET expire incident into out on the old
// build, step 2 marked with the oracle error.
func RecordSetExpire(out, old string) error {
	if err := RecordSession(out, old, SetExpire); err != nil {
		return err
	}
	return MarkFailure(out, 2, "error")
}

// RecordIncrby records the INCRBY incident into out on the old build and
// marks step 4 with oracle (e.g. "error", or the loose "error:ERR") as
// `kavach mark` does.
func RecordIncrby(out, old, oracle string) error {
	if err := RecordSession(out, old, Incrby); err != nil {
		return err
	}
	return MarkFailure(out, 4, oracle)
}

// RecordWithRedisCli records a session the way a person would with the
// stock client: the commands piped into one redis-cli (7.x) process, which
// first sends COMMAND DOCS (for its hints) on its connection, a reply
// whose order changes with every server process. Every command must be
// answered (errors included); the recording is then stopped. redisCli is
// the client's path.
func RecordWithRedisCli(out, old, redisCli string, session [][]string) error {
	rec, err := start(out, old)
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(rec.Addr)
	var in strings.Builder
	for _, c := range session {
		words := make([]string, len(c))
		for i, a := range c {
			words[i] = cliQuote(a)
		}
		in.WriteString(strings.Join(words, " ") + "\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, redisCli, "-h", host, "-p", port)
	cmd.Stdin = strings.NewReader(in.String())
	output, err := cmd.CombinedOutput()
	time.Sleep(50 * time.Millisecond) // the close reaches the proxy
	if _, serr := rec.Stop(); err == nil {
		err = serr
	} else {
		err = fmt.Errorf("redis-cli: %w: %s", err, output)
	}
	return err
}

// cliQuote writes an argument as redis-cli reads a typed line: as it is
// when it is a plain word, else in double quotes with escapes (a script's
// spaces and quotes, an empty argument).
func cliQuote(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t\r\n\"'\\") {
		return a
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(a); i++ {
		switch c := a[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c < ' ' || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// MarkFailure marks step n of the fixture at out as failing by oracle, as
// kavach mark does.
func MarkFailure(out string, n int, oracle string) error {
	o, err := kavach.ParseOracle(oracle)
	if err != nil {
		return err
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		return err
	}
	f, err := record.FailureAt(fx, redis.Integration{}, n, o)
	if err != nil {
		return err
	}
	return fixtures.Amend(out, fixtures.Amendment{Failure: &f})
}

// The upgrade incident: data the old build wrote, read by the fix. The old
// build stores every SET value with its C string terminator (a write
// fault), and its GET, finding a value that ends in one, stops the server
// rather than serve it (the read path's check). The correct fix serves
// such a value without the terminator, whoever wrote it; the wrong one
// only stops writing it, so the data the old build wrote still stops it.
// Replayed from an empty server, both fixes pass: only a new build started
// from the old build's data tells them apart (the "upgrade" variant).
var (
	UpgradeOld           = []string{"upgrade-stores-terminator.patch", "upgrade-read-asserts.patch"}
	UpgradeFixConverts   = []string{"upgrade-fix-converts.patch"}
	UpgradeFixWritesOnly = []string{"upgrade-read-asserts.patch"}
)

// Upgrade is the upgrade incident's session: two SETs, then a GET of the
// first, which kills the old build (step 3, a crash).
var Upgrade = [][]string{
	{"SET", "user:1", "alice"},
	{"SET", "user:2", "bob"},
	{"GET", "user:1"},
}
