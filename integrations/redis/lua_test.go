package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
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
	for _, s := range (Integration{}).Values(cmd(args...), nil, time.Time{}) {
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
		out = append(out, s.Kind+" | "+strings.Join(setup, ", ")+" | "+Integration{}.DescribeRequest(s.Request, 0))
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
	if notes := (Integration{}).LeftWhole(cmd("EVAL", dynamic, "1", "k", "GET")); len(notes) != 1 || !strings.Contains(notes[0], "not a plain string") {
		t.Errorf("LeftWhole: %q, want the script left whole and why", notes)
	}
	if notes := (Integration{}).LeftWhole(cmd("EVAL", write, "1", "h", "f", "-3")); notes != nil {
		t.Errorf("LeftWhole of a script read whole: %q", notes)
	}
	if notes := (Integration{}).LeftWhole(cmd("FCALL", "bump", "1", "k", "2")); len(notes) != 1 {
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
		for _, s := range (Integration{}).Values(req, schema, time.Time{}) {
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
	if subs, skipped := (Integration{}).Siblings(req, l); len(subs) != 0 || !slices.Equal(skipped, []string{"EVAL_RO", "FCALL_RO"}) {
		t.Errorf("Siblings: %d made, skipped %v; want none made, EVAL_RO, FCALL_RO skipped", len(subs), skipped)
	}
	// What the build has is unknown: every runner, as before, none skipped.
	for _, schema := range []kavach.Schema{nil, &Learned{}} {
		if got := runnersOf(schema); len(got) != 5 {
			t.Errorf("schema %v: runners %v, want the 5 others", schema, got)
		}
		if _, skipped := (Integration{}).Siblings(req, schema); skipped != nil {
			t.Errorf("schema %v: skipped %v, want none", schema, skipped)
		}
	}
	// A write gets no _RO runner, so none is skipped for lacking one.
	write := cmd("EVAL", "return redis.call('INCR', KEYS[1])", "1", "k")
	if _, skipped := (Integration{}).Siblings(write, l); skipped != nil {
		t.Errorf("a write: skipped %v, want none", skipped)
	}
	// A runner whose script is not in the request has no runner variants.
	if _, skipped := (Integration{}).Siblings(cmd("EVALSHA", "abc", "0"), l); skipped != nil {
		t.Errorf("EVALSHA: skipped %v, want none", skipped)
	}
}

// Every runner variant runs the script as the recorded EVAL did, on a real
// build: the same reply, from the same data.
func TestScriptRunnersRun(t *testing.T) {
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t)})
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

// The functions a library registers, in both call forms, and which
// libraries cannot be read.
func TestLuaRegistrations(t *testing.T) {
	lib := "#!lua name=lib\n" +
		"local function bump(keys, args) return redis.call('INCRBY', keys[1], args[1]) end\n" +
		"redis.register_function('bump', bump)\n" +
		"redis.register_function{function_name='peek', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}\n" +
		"server.register_function({function_name = \"Other\"; callback = bump})\n" +
		"-- redis.register_function('commented', bump)\n" +
		"local s = \"redis.register_function('quoted', bump)\""
	regs, err := luaRegistrations(lib)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range regs {
		got = append(got, fmt.Sprintf("%s %q inline=%v no-writes=%v", r.name, lib[r.cb[0]:r.cb[1]], r.inline, r.noWrites))
	}
	want := []string{
		`bump "bump" inline=false no-writes=false`,
		`peek "function(keys) return redis.call('GET', keys[1]) end" inline=true no-writes=true`,
		`Other "bump" inline=false no-writes=false`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("registrations\n got %q\nwant %q", got, want)
	}
	for _, src := range []string{
		"redis.register_function(name, function() end)",        // the name is not a literal
		"redis.register_function('a' .. 'b', function() end)",  // nor a whole one
		"redis.register_function{function_name=n, callback=f}", // nor in a table
		"redis.register_function{['function_name']='f', callback=f}",
		"redis.register_function('f', function() end",
		"local r = redis.register_function r('f', function() end)", // taken as a value
		"redis.register_function('f', function() return 'open end)",
	} {
		if regs, err := luaRegistrations(src); err == nil {
			t.Errorf("%q: found %d registrations, want an error", src, len(regs))
		}
	}
}

// An EVALSHA's script is found in the latest SCRIPT LOAD or EVAL before
// it with its sha1 (written in either case); an FCALL's in the latest
// FUNCTION LOAD whose library registers its function (any case). A
// script not found says why.
func TestFindScript(t *testing.T) {
	script := "return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])"
	sha := sha1Hex([]byte(script))
	lib := func(name, fn string) string {
		return "#!lua name=" + name + "\nredis.register_function('" + fn + "', function(keys, args) return redis.call('GET', keys[1]) end)"
	}
	for _, tt := range []struct {
		why     string
		earlier [][]byte
		req     []byte
		src     string // "" for none
		whyNot  string
	}{
		{"EVALSHA after SCRIPT LOAD", [][]byte{cmd("SET", "k", "v"), cmd("SCRIPT", "LOAD", script), cmd("GET", "k")},
			cmd("EVALSHA", sha, "1", "h", "f", "-3"), script, ""},
		{"the sha1 in upper case, script load in lower case", [][]byte{cmd("script", "load", script)},
			cmd("EVALSHA_RO", strings.ToUpper(sha), "0"), script, ""},
		{"EVALSHA after an EVAL of the script", [][]byte{cmd("EVAL", script, "1", "h", "f", "1")},
			cmd("EVALSHA", sha, "1", "h", "f", "-3"), script, ""},
		{"EVALSHA of another script", [][]byte{cmd("SCRIPT", "LOAD", "return 1")},
			cmd("EVALSHA", sha, "0"), "", "not in the request, nor sent by an earlier SCRIPT LOAD or EVAL"},
		{"FCALL after FUNCTION LOAD", [][]byte{cmd("FUNCTION", "LOAD", lib("a", "greet")), cmd("FUNCTION", "LOAD", lib("b", "other"))},
			cmd("FCALL", "GREET", "1", "k"), lib("a", "greet"), ""},
		{"FCALL after FUNCTION LOAD REPLACE: the latest", [][]byte{cmd("FUNCTION", "LOAD", lib("a", "greet")), cmd("FUNCTION", "LOAD", "REPLACE", lib("a2", "greet"))},
			cmd("FCALL_RO", "greet", "1", "k"), lib("a2", "greet"), ""},
		{"FCALL of a function no library registers", [][]byte{cmd("FUNCTION", "LOAD", lib("a", "greet"))},
			cmd("FCALL", "bye", "0"), "", "not in the request, nor registered by an earlier FUNCTION LOAD"},
		{"FCALL after a library Kavach cannot read", [][]byte{cmd("FUNCTION", "LOAD", "#!lua name=x\nredis.register_function(n, f)")},
			cmd("FCALL", "greet", "0"), "", "not in the request, nor registered by an earlier FUNCTION LOAD that Kavach can read (an earlier library: the function registered at byte 13 is not named by a plain string)"},
		{"EVAL: its own", [][]byte{cmd("SCRIPT", "LOAD", "return 1")}, cmd("EVAL", script, "0"), script, ""},
		{"not a script", nil, cmd("GET", "k"), "", ""},
	} {
		c, err := ParseCommand(tt.req)
		if err != nil {
			t.Fatal(err)
		}
		s, why, ok := findScript(c, tt.earlier)
		if ok != (tt.src != "") || s.src != tt.src || why != tt.whyNot {
			t.Errorf("%s: found %v %q (%q), want %q (%q)", tt.why, ok, s.src, why, tt.src, tt.whyNot)
		}
	}
}

// scriptVariantsAfter are the script variants of a request sent after
// earlier, as the generator asks for them (After).
func scriptVariantsAfter(earlier [][]byte, args ...string) []kavach.Substitution {
	var out []kavach.Substitution
	for _, s := range (Integration{}).After(earlier).Values(cmd(args...), nil, time.Time{}) {
		if s.Kind == "script-site" || s.Kind == "runner" {
			out = append(out, s)
		}
	}
	return out
}

// An EVALSHA's script, found in the SCRIPT LOAD before it, gets site
// variants (the changed script loaded again, then run by its own sha1)
// and runners; an FCALL's function gets site variants of its own sites
// (the changed library loaded again with REPLACE, then the same FCALL)
// and runners through the library wrapped into a script.
func TestScriptVariantsAfter(t *testing.T) {
	script := "return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])"
	sha := sha1Hex([]byte(script))
	float := strings.Replace(script, "HINCRBY", "HINCRBYFLOAT", 1)
	earlier := [][]byte{cmd("HSET", "h", "f", "1"), cmd("SCRIPT", "LOAD", script)}
	subs := scriptVariantsAfter(earlier, "EVALSHA", sha, "1", "h", "f", "-3")
	got := describeSubs(subs)
	wantValues(t, got,
		`script-site | SCRIPT LOAD | EVALSHA "`+sha1Hex([]byte(float))+`" "1" "h" "f" "-3"`,
		`runner |  | EVAL "`+script+`" "1" "h" "f" "-3"`,
		`runner | FUNCTION LOAD | FCALL "kavach_`+sha+`" "1" "h" "f" "-3"`)
	wantNoValues(t, got, "EVALSHA_RO", "EVAL_RO", `runner | SCRIPT LOAD | EVALSHA "`+sha)
	for _, s := range subs {
		if strings.Contains(s.What, "HINCRBYFLOAT") {
			if c, _ := ParseCommand(s.Setup[0]); string(c.Args[2]) != float {
				t.Errorf("%s: loads %q, want %q", s.What, c.Args[2], float)
			}
		}
	}
	// Without the steps before it, nothing: the script is not known.
	if subs := scriptVariantsOf("EVALSHA", sha, "1", "h", "f", "-3"); len(subs) != 0 {
		t.Errorf("EVALSHA alone: %d script variants, want none", len(subs))
	}
	if notes := (Integration{}).After(earlier).LeftWhole(cmd("EVALSHA", sha, "1", "h", "f", "-3")); notes != nil {
		t.Errorf("LeftWhole of an EVALSHA whose script is found: %q", notes)
	}

	// A library of two functions: only greet's sites are varied.
	lib := "#!lua name=greetings\n" +
		"redis.register_function('greet', function(keys, args) return redis.call('GET', keys[1]) .. args[1] end)\n" +
		"redis.register_function{function_name='count', callback=function(keys) return redis.call('INCR', keys[1]) end}"
	earlier = [][]byte{cmd("SET", "k", "hello"), cmd("FUNCTION", "LOAD", lib)}
	subs = scriptVariantsAfter(earlier, "FCALL", "greet", "1", "k", "")
	got = describeSubs(subs)
	wrapped := wrapLibrary(lib, luaReg{name: "greet"})
	wantValues(t, got,
		`runner | SCRIPT LOAD | EVALSHA "`+sha1Hex([]byte(wrapped))+`" "1" "k" ""`,
		`runner | SCRIPT LOAD | EVALSHA_RO "`+sha1Hex([]byte(wrapped))+`" "1" "k" ""`)
	wantPrefixes(t, got, `runner |  | EVAL "local kavach_fn\n`, `runner |  | EVAL_RO "local kavach_fn\n`,
		`runner | FUNCTION LOAD | FCALL_RO "kavach_`, `script-site | FUNCTION LOAD | FCALL "greet" "1" "k" ""`)
	wantNoValues(t, got, `runner | FUNCTION LOAD | FCALL "`)
	sites := 0
	for _, s := range subs {
		if s.Kind != "script-site" {
			continue
		}
		sites++
		c, _ := ParseCommand(s.Setup[0])
		if c.Name != "FUNCTION" || string(c.Args[1]) != "LOAD" || string(c.Args[2]) != "REPLACE" {
			t.Errorf("%s: setup %q, want FUNCTION LOAD REPLACE", s.What, c.Args)
		}
		changed := string(c.Args[3])
		if !strings.HasSuffix(changed, "redis.register_function{function_name='count', callback=function(keys) return redis.call('INCR', keys[1]) end}") {
			t.Errorf("%s: another function's site changed: %q", s.What, changed)
		}
	}
	if sites == 0 {
		t.Errorf("FCALL greet: no site variants:\n%s", strings.Join(got, "\n"))
	}
	// FCALL_RO: its FCALL runner is the same function called by FCALL.
	got = describeSubs(scriptVariantsAfter(earlier, "FCALL_RO", "greet", "1", "k", ""))
	wantValues(t, got, `runner |  | FCALL "greet" "1" "k" ""`)
	wantNoValues(t, got, "runner | FUNCTION LOAD | FCALL_RO")
}

// Every runner of an FCALL (the library wrapped into a script, through
// EVAL, EVALSHA, their _RO forms, FCALL_RO) gives the reply the FCALL
// gives, on a real build: both registration forms, a callback defined
// apart, flags, another function in the library, a name in another case.
func TestWrappedLibraryRuns(t *testing.T) {
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t)})
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
		why, lib string
		fcall    []string
		runs     int
	}{
		{"positional, a read", "#!lua name=l1\nredis.register_function('greet', function(keys, args) return redis.call('GET', keys[1]) .. args[1] end)",
			[]string{"FCALL", "greet", "1", "k", " world"}, 5},
		{"a table, flagged no-writes, called in another case, beside another function",
			"#!lua name=l2\nlocal function other(keys) return 0 end\nredis.register_function('other', other)\n" +
				"redis.register_function{function_name='Peek', callback=function(keys, args) return {redis.call('STRLEN', keys[1]), #args} end, flags={'no-writes'}}",
			[]string{"FCALL_RO", "PEEK", "1", "k", "a", "b"}, 5},
		{"a write, its callback defined apart", "#!lua name=l3\nlocal function bump(keys, args)\n  return redis.call('INCRBY', keys[2], args[1])\nend\nredis.register_function('bump', bump)",
			[]string{"FCALL", "bump", "2", "k", "n", "5"}, 2},
	} {
		reset := func() {
			send(cmd("FUNCTION", "FLUSH"))
			send(cmd("FLUSHALL"))
			send(cmd("SET", "k", "hello"))
			if r := send(cmd("FUNCTION", "LOAD", tt.lib)); strings.HasPrefix(r, "-") {
				t.Fatalf("%s: FUNCTION LOAD: %s", tt.why, r)
			}
		}
		reset()
		want := send(cmd(tt.fcall...))
		if strings.HasPrefix(want, "-") {
			t.Fatalf("%s: the recorded FCALL fails: %s", tt.why, want)
		}
		runs := 0
		for _, s := range scriptVariantsAfter([][]byte{cmd("FUNCTION", "LOAD", tt.lib)}, tt.fcall...) {
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
				t.Errorf("%s: %s: %q, want %q as FCALL answers", tt.why, s.What, got, want)
			}
		}
		if runs != tt.runs {
			t.Errorf("%s: %d runner variants, want %d", tt.why, runs, tt.runs)
		}
	}
}
