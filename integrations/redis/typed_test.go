package redis

import (
	"slices"
	"strings"
	"testing"
)

func typedRequests(t *testing.T, args ...string) (reqs []string, setups [][]string) {
	t.Helper()
	for _, s := range typedSiblings(command(args), nil, nil) {
		c, err := ParseCommand(s.Request)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, a := range c.Args {
			parts = append(parts, string(a))
		}
		reqs = append(reqs, strings.Join(parts, " "))
		var setup []string
		for _, w := range s.Setup {
			c, _ := ParseCommand(w)
			var p []string
			for _, a := range c.Args {
				p = append(p, string(a))
			}
			setup = append(setup, strings.Join(p, " "))
		}
		setups = append(setups, setup)
		if s.Group == "" || s.What == "" {
			t.Errorf("%q: no group or description", reqs[len(reqs)-1])
		}
	}
	return reqs, setups
}

// A request with an integer argument is made by the commands of other
// families with one, on keys of their type written first; the members of
// its own family are left to the sibling variants.
func TestTypedSiblings(t *testing.T) {
	reqs, setups := typedRequests(t, "PEXPIRE", "session", "1000")
	want := []string{
		"INCRBY kavach:typed:counter 1000", "DECRBY kavach:typed:counter 1000", "HINCRBY kavach:typed:hash kavach 1000",
		"LTRIM kavach:typed:list 0 1000", "LRANGE kavach:typed:list 0 1000", "LINDEX kavach:typed:list 1000",
		"GETRANGE kavach:typed:string 0 1000", "SETRANGE kavach:typed:string 1000 x",
	}
	if !slices.Equal(reqs, want) {
		t.Errorf("typed siblings of PEXPIRE:\n%s\nwant\n%s", strings.Join(reqs, "\n"), strings.Join(want, "\n"))
	}
	if i := slices.Index(reqs, "LTRIM kavach:typed:list 0 1000"); i < 0 || !slices.Equal(setups[i], []string{"DEL kavach:typed:list", "RPUSH kavach:typed:list a b c"}) {
		t.Errorf("LTRIM's setup: %v", setups)
	}

	// An offset that would allocate is not given to SETRANGE.
	reqs, _ = typedRequests(t, "INCRBY", "counter", "100000000")
	if slices.ContainsFunc(reqs, func(r string) bool { return strings.HasPrefix(r, "SETRANGE") }) {
		t.Errorf("SETRANGE given an offset of 100 MB: %v", reqs)
	}
	if slices.ContainsFunc(reqs, func(r string) bool { return strings.HasPrefix(r, "DECRBY") || strings.HasPrefix(r, "HINCRBY") }) {
		t.Errorf("INCRBY's own family made: %v", reqs)
	}

	// No integer argument, no typed sibling.
	if reqs, _ := typedRequests(t, "GET", "k"); reqs != nil {
		t.Errorf("GET: %v", reqs)
	}
	if reqs, _ := typedRequests(t, "INCRBY", "k"); reqs != nil {
		t.Errorf("INCRBY without its increment: %v", reqs)
	}
}

// A script's call site with an integer argument is rewritten to call
// the other families' commands with the same expression, on a literal
// key of their type written before the script runs.
func TestTypedSites(t *testing.T) {
	src := "local ms = tonumber(ARGV[1]) * 1000\nreturn redis.call('PEXPIRE', KEYS[1], ms)"
	subs := typedSiblings(command([]string{"EVAL", src, "1", "session", "5"}), nil, nil)
	var texts []string
	for _, s := range subs {
		c, err := ParseCommand(s.Request)
		if err != nil || c.Name != "EVAL" {
			t.Fatalf("%q: %v", s.Request, err)
		}
		texts = append(texts, string(c.Args[1]))
	}
	want := "local ms = tonumber(ARGV[1]) * 1000\nreturn redis.call('INCRBY', 'kavach:typed:counter', ms)"
	if len(texts) == 0 || texts[0] != want {
		t.Errorf("first site rewrite %q, want %q", texts, want)
	}
	for _, tx := range texts {
		for _, kin := range []string{"'EXPIRE'", "'PERSIST'", "'TTL'", "'SETRANGE'"} {
			if strings.Contains(tx, kin) {
				t.Errorf("site rewritten to %s: %q", kin, tx)
			}
		}
	}
	if len(subs) > 0 && (len(subs[0].Setup) != 2 || !strings.Contains(subs[0].What, "script site 1")) {
		t.Errorf("setup %q, what %q", subs[0].Setup, subs[0].What)
	}
	// A script Kavach cannot read is left alone.
	if s := typedSiblings(command([]string{"EVAL", "return redis.call(ARGV[1], KEYS[1], 5)", "1", "k", "INCRBY"}), nil, nil); s != nil {
		t.Errorf("unreadable script: %v", s)
	}
}

// Typed site rewrites never panic on any script, and every rewritten
// script parses again with as many sites, the rewritten one calling a
// command of typedMembers.
func FuzzTypedSites(f *testing.F) {
	for _, s := range []string{
		"return redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]) * 1000)",
		"return redis.call('INCRBY', KEYS[1], redis.call('GET', KEYS[2]))",
		"redis.call('LTRIM', 'k', 0, f(1, {2, 3})) return redis.call('SETEX', 'a', 5, 'v')",
		"return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])", "redis.call(", "return redis.call('EXPIRE')",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		calls, err := luaCalls(src)
		subs := typedSiblings(command([]string{"EVAL", src, "1", "k", "5"}), nil, nil)
		if err != nil {
			if subs != nil {
				t.Fatalf("%q: unreadable, yet %d rewrites", src, len(subs))
			}
			return
		}
		for _, s := range subs {
			c, err := ParseCommand(s.Request)
			if err != nil || len(c.Args) != 5 {
				t.Fatalf("%q: rewrite %q: %v", src, s.Request, err)
			}
			again, err := luaCalls(string(c.Args[1]))
			if err != nil || len(again) != len(calls) {
				t.Fatalf("%q rewritten to %q: %d sites (%v), want %d", src, c.Args[1], len(again), err, len(calls))
			}
		}
	})
}

// An FCALL's function, found in the FUNCTION LOAD before it: its sites
// are rewritten in the library, loaded again before the call.
func TestTypedSitesFcall(t *testing.T) {
	lib := "#!lua name=counters\nredis.register_function('bump', function(keys, args) return redis.call('INCRBY', keys[1], args[1]) end)\nredis.register_function('get', function(keys) return redis.call('GET', keys[1]) end)"
	earlier := [][]byte{command([]string{"FUNCTION", "LOAD", lib})}
	subs := afterCodec{earlier: earlier}.TypedSiblings(command([]string{"FCALL", "bump", "1", "c", "5"}), nil)
	if len(subs) == 0 {
		t.Fatal("no typed site of the function")
	}
	last := subs[0].Setup[len(subs[0].Setup)-1]
	c, _ := ParseCommand(last)
	if c.Name != "FUNCTION" || !strings.Contains(string(c.Args[len(c.Args)-1]), "redis.call('LTRIM', 'kavach:typed:list', '0', args[1])") &&
		!strings.Contains(string(c.Args[len(c.Args)-1]), "'kavach:typed:") {
		t.Errorf("setup ends with %q", last)
	}
}

// A script an EVALSHA runs takes the trigger in its sites' numbers and
// is loaded again, changed, before the call; only integers go there.
func TestSiteTransplants(t *testing.T) {
	src := "redis.call('LTRIM', KEYS[1], 0, 99) return redis.call('EXPIRE', KEYS[1], ARGV[1])"
	a := afterCodec{earlier: [][]byte{command([]string{"SCRIPT", "LOAD", src})}}
	subs := a.SiteTransplants(command([]string{"EVALSHA", sha1Hex([]byte(src)), "1", "k", "5"}), "-7")
	var texts []string
	for _, s := range subs {
		if len(s.Setup) != 1 {
			t.Fatalf("setup %q, want the changed script loaded", s.Setup)
		}
		c, _ := ParseCommand(s.Setup[0])
		texts = append(texts, string(c.Args[2]))
		r, _ := ParseCommand(s.Request)
		if string(r.Args[1]) != sha1Hex(c.Args[2]) {
			t.Errorf("EVALSHA %s runs another script than the one loaded", r.Args[1])
		}
	}
	want := []string{
		"redis.call('LTRIM', KEYS[1], (-7), 99) return redis.call('EXPIRE', KEYS[1], ARGV[1])",
		"redis.call('LTRIM', KEYS[1], 0, (-7)) return redis.call('EXPIRE', KEYS[1], ARGV[1])",
	}
	if !slices.Equal(texts, want) {
		t.Errorf("scripts %q, want %q", texts, want)
	}
	if s := a.SiteTransplants(command([]string{"EVAL", src, "1", "k"}), "abc"); s != nil {
		t.Errorf("a text put in a number's place: %v", s)
	}
	if s := (Integration{}).SiteTransplants(command([]string{"GET", "k"}), "5"); s != nil {
		t.Errorf("GET: %v", s)
	}
}
