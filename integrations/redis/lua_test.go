package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
)

// sites are the call sites luaCalls finds, each as "fn name arg, arg".
func sites(t *testing.T, src string) []string {
	t.Helper()
	calls, err := luaCalls(src)
	if err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	var out []string
	for _, c := range calls {
		var args []string
		for _, a := range c.args {
			args = append(args, src[a[0]:a[1]])
		}
		out = append(out, c.fn+" "+c.name+" "+strings.Join(args, ", "))
	}
	return out
}

// Call sites are found as Lua reads the text: not inside strings or
// comments, nested calls too, each argument as written.
func TestLuaCalls(t *testing.T) {
	for _, tt := range []struct {
		why, src string
		want     []string
	}{
		{"the incident's script", "return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])",
			[]string{"redis.call HINCRBY KEYS[1], ARGV[1], ARGV[2]"}},
		{"every library name and call form", `redis.pcall("GET", "k"); server.call('SET', 'k', 'v') return server.pcall('PING')`,
			[]string{"redis.pcall GET \"k\"", "server.call SET 'k', 'v'", "server.pcall PING "}},
		{"a call nested in another's arguments, brackets and tables kept whole",
			"return redis.call('SET', KEYS[1], redis.call('GET', KEYS[2]) .. f(1, {2, 3}))",
			[]string{"redis.call SET KEYS[1], redis.call('GET', KEYS[2]) .. f(1, {2, 3})", "redis.call GET KEYS[2]"}},
		{"calls in comments and strings are none", "-- redis.call('DEL', 'x')\n--[==[ redis.call('DEL', 'y') ]==]\nlocal s = \"redis.call('DEL', 'z')\" .. [[redis.call('DEL')]]\nreturn redis.call('TYPE', s)",
			[]string{"redis.call TYPE s"}},
		{"a field of another table named redis is not the library", "return t.redis.call('DEL', 'x')", nil},
		{"no calls", "return 1", nil},
	} {
		if got := sites(t, tt.src); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q\n got %q\nwant %q", tt.why, tt.src, got, tt.want)
		}
	}
}

// A script Kavach cannot read is refused, so that it is left whole.
func TestLuaCallsRefused(t *testing.T) {
	for _, src := range []string{
		"return redis.call(cmd, KEYS[1])",         // the command is not a literal
		"return redis.call('GE' .. 'T', KEYS[1])", // nor a whole one
		"return redis.call('G\\69T', KEYS[1])",    // an escape
		"local c = redis.call return c('GET', 'k')",
		"return redis.call'GET'",
		"return redis.call('GET', KEYS[1]",
		"return 'open",
		"--[[ a comment not closed",
		"return [==[ a long string not closed ]]",
		"return redis.call",
		"redis.call(",
	} {
		if calls, err := luaCalls(src); err == nil {
			t.Errorf("%q: found %d calls, want an error", src, len(calls))
		}
	}
}

// scriptVariantsOf are the script variants Values makes of a request.
func scriptVariantsOf(args ...string) []kavach.Substitution {
	var out []kavach.Substitution
	for _, s := range (Codec{}).Values(cmd(args...), nil, time.Time{}) {
		if s.Kind == "script-site" || s.Kind == "runner" {
			out = append(out, s)
		}
	}
	return out
}

// describeSubs are substitutions as "kind | setup commands | request".
func describeSubs(subs []kavach.Substitution) []string {
	var out []string
	for _, s := range subs {
		var setup []string
		for _, w := range s.Setup {
			c, _ := ParseCommand(w)
			setup = append(setup, string(c.Args[0])+" "+string(c.Args[1]))
		}
		out = append(out, s.Kind+" | "+strings.Join(setup, ", ")+" | "+Codec{}.DescribeRequest(s.Request, 0))
	}
	return out
}

// wantPrefixes checks that each of want begins one of got.
func wantPrefixes(t *testing.T, got []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("none of %d begins %s:\n%s", len(got), w, strings.Join(got, "\n"))
		}
	}
}

// A script's call site is varied within its family (a sibling, a read for
// a write), its text otherwise kept byte for byte; the script is run
// through the other runners, the _RO ones only when it only reads.
func TestScriptVariants(t *testing.T) {
	write := "return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])"
	got := describeSubs(scriptVariantsOf("EVAL", write, "1", "h", "f", "-3"))
	sum := sha1.Sum([]byte(write))
	sha := hex.EncodeToString(sum[:])
	wantValues(t, got,
		`script-site |  | EVAL "return redis.call('HINCRBYFLOAT', KEYS[1], ARGV[1], ARGV[2])" "1" "h" "f" "-3"`,
		`script-site |  | EVAL "return redis.call('HGET', KEYS[1], ARGV[1])" "1" "h" "f" "-3"`,
		`runner | SCRIPT LOAD | EVALSHA "`+sha+`" "1" "h" "f" "-3"`,
		`runner | FUNCTION LOAD | FCALL "kavach_`+sha+`" "1" "h" "f" "-3"`)
	wantNoValues(t, got, "EVAL_RO", "EVALSHA_RO", "FCALL_RO", `"EVAL "return`)
	if !strings.HasPrefix(got[0], "script-site") || !strings.Contains(got[0], "HINCRBYFLOAT") {
		t.Errorf("first %s: want the sibling of the same access first", got[0])
	}

	// A read, written in lower case: a write for it keeps the case; the
	// read-only runners come too, and the recorded runner does not.
	read := "local v = redis.call('get', KEYS[1]) return v"
	got = describeSubs(scriptVariantsOf("EVAL_RO", read, "1", "k"))
	wantValues(t, got,
		`script-site |  | EVAL_RO "local v = redis.call('strlen', KEYS[1]) return v" "1" "k"`,
		`script-site |  | EVAL_RO "local v = redis.call('incrby', KEYS[1], '1') return v" "1" "k"`,
		`runner |  | EVAL "`+read+`" "1" "k"`)
	wantPrefixes(t, got, `runner | SCRIPT LOAD | EVALSHA_RO "`, `runner | FUNCTION LOAD | FCALL_RO "`)
	wantNoValues(t, got, `runner |  | EVAL_RO`)

	// A library's sites are varied in the FUNCTION LOAD request; each
	// function it registers is run, with no keys and no arguments, through
	// the script runners (the library wrapped into a script).
	lib := "#!lua name=counters\nredis.register_function('bump', function(keys, args) return redis.call('INCRBY', keys[1], args[1]) end)"
	got = describeSubs(scriptVariantsOf("FUNCTION", "LOAD", "REPLACE", lib))
	wantValues(t, got, `script-site |  | FUNCTION "LOAD" "REPLACE" "`+strings.ReplaceAll(strings.ReplaceAll(lib, "INCRBY", "DECRBY"), "\n", `\n`)+`"`)
	wrapped := wrapLibrary(lib, luaReg{name: "bump"})
	wantValues(t, got, `runner | SCRIPT LOAD | EVALSHA "`+sha1Hex([]byte(wrapped))+`" "0"`)
	wantPrefixes(t, got, `runner |  | EVAL "local kavach_fn\n`, `runner | FUNCTION LOAD | FCALL "kavach_`)
	wantNoValues(t, got, "EVAL_RO", "FCALL_RO")

	// A script that cannot be read keeps its text: runners only, and
	// LeftWhole says why.
	dynamic := "return redis.call(ARGV[1], KEYS[1])"
	got = describeSubs(scriptVariantsOf("EVAL", dynamic, "1", "k", "GET"))
	wantNoValues(t, got, "script-site")
	wantPrefixes(t, got, `runner | SCRIPT LOAD | EVALSHA "`)
	if notes := (Codec{}).LeftWhole(cmd("EVAL", dynamic, "1", "k", "GET")); len(notes) != 1 || !strings.Contains(notes[0], "not a plain string") {
		t.Errorf("LeftWhole: %q, want the script left whole and why", notes)
	}
	if notes := (Codec{}).LeftWhole(cmd("EVAL", write, "1", "h", "f", "-3")); notes != nil {
		t.Errorf("LeftWhole of a script read whole: %q", notes)
	}
	if notes := (Codec{}).LeftWhole(cmd("FCALL", "bump", "1", "k", "2")); len(notes) != 1 {
		t.Errorf("LeftWhole of FCALL: %q, want a note that its script is not in the request", notes)
	}
}

// A runner the build lacks (the learned schema does not have it) is not
// made: it is skipped, and Siblings names it for the report. Nothing
// learned: every runner, none named.
func TestScriptRunnersTheBuildLacks(t *testing.T) {
	read := "return redis.call('GET', KEYS[1])"
	req := cmd("EVAL", read, "1", "k")
	l := every()
	delete(l.Commands, "FCALL_RO")
	delete(l.Commands, "EVAL_RO")
	runnersOf := func(schema kavach.Schema) []string {
		var out []string
		for _, s := range (Codec{}).Values(req, schema, time.Time{}) {
			if s.Kind == "runner" {
				c, _ := ParseCommand(s.Request)
				out = append(out, c.Name)
			}
		}
		return out
	}
	if got := runnersOf(l); !slices.Equal(got, []string{"EVALSHA", "FCALL", "EVALSHA_RO"}) {
		t.Errorf("runners on a build without EVAL_RO, FCALL_RO: %v, want EVALSHA, FCALL, EVALSHA_RO", got)
	}
	if subs, skipped := (Codec{}).Siblings(req, l); len(subs) != 0 || !slices.Equal(skipped, []string{"EVAL_RO", "FCALL_RO"}) {
		t.Errorf("Siblings: %d made, skipped %v; want none made, EVAL_RO, FCALL_RO skipped", len(subs), skipped)
	}
	// What the build has is unknown: every runner, as before, none skipped.
	for _, schema := range []kavach.Schema{nil, &Learned{}} {
		if got := runnersOf(schema); len(got) != 5 {
			t.Errorf("schema %v: runners %v, want the 5 others", schema, got)
		}
		if _, skipped := (Codec{}).Siblings(req, schema); skipped != nil {
			t.Errorf("schema %v: skipped %v, want none", schema, skipped)
		}
	}
	// A write gets no _RO runner, so none is skipped for lacking one.
	write := cmd("EVAL", "return redis.call('INCR', KEYS[1])", "1", "k")
	if _, skipped := (Codec{}).Siblings(write, l); skipped != nil {
		t.Errorf("a write: skipped %v, want none", skipped)
	}
	// A runner whose script is not in the request has no runner variants.
	if _, skipped := (Codec{}).Siblings(cmd("EVALSHA", "abc", "0"), l); skipped != nil {
		t.Errorf("EVALSHA: skipped %v, want none", skipped)
	}
}

// Every runner variant runs the script as the recorded EVAL did, on a real
// build: the same reply, from the same data.
func TestScriptRunnersRun(t *testing.T) {
	p, err := Launcher{}.Start(kavach.Launch{Path: redisServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	ctx := context.Background()
	send := func(frame []byte) string {
		t.Helper()
		c, err := ParseCommand(frame)
		if err != nil {
			t.Fatal(err)
		}
		args := make([]string, len(c.Args))
		for i, a := range c.Args {
			args[i] = string(a)
		}
		v, err := call(ctx, p.Addr(), args...)
		if err != nil {
			t.Fatal(err)
		}
		return string(v.Raw)
	}
	for _, tt := range []struct {
		why  string
		eval []string
		runs int // runner variants expected
	}{
		{"a write: EVALSHA and FCALL", []string{"EVAL", "return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])", "1", "h", "f", "-3"}, 2},
		{"a read: every runner", []string{"EVAL", "return redis.call('GET', KEYS[1])", "1", "h:k"}, 5},
		{"a shebang with flags", []string{"EVAL", "#!lua flags=no-writes,allow-stale\nreturn redis.pcall('STRLEN', KEYS[1])", "1", "h:k"}, 5},
	} {
		reset := func() {
			send(cmd("FLUSHALL"))
			send(cmd("SET", "h:k", "hello"))
		}
		reset()
		want := send(cmd(tt.eval...))
		if strings.HasPrefix(want, "-") {
			t.Fatalf("%s: the recorded EVAL fails: %s", tt.why, want)
		}
		runs := 0
		for _, s := range scriptVariantsOf(tt.eval...) {
			if s.Kind != "runner" {
				continue
			}
			runs++
			reset()
			for _, w := range s.Setup {
				if r := send(w); strings.HasPrefix(r, "-") {
					t.Errorf("%s: %s: setup refused: %s", tt.why, s.What, r)
				}
			}
			if got := send(s.Request); got != want {
				t.Errorf("%s: %s: %q, want %q as EVAL answers", tt.why, s.What, got, want)
			}
		}
		if runs != tt.runs {
			t.Errorf("%s: %d runner variants, want %d", tt.why, runs, tt.runs)
		}
	}
}
