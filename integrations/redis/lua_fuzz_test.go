package redis

import (
	"slices"
	"strings"
	"testing"
)

// The Lua call-site parser never panics on any text, and a site renamed
// (as a sibling with the same arguments is written) parses again to the
// same sites: the same functions and arguments, the renamed one's new
// name. Every site edit of a script parses again.
func FuzzLuaCalls(f *testing.F) {
	for _, s := range []string{
		"return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])",
		`redis.pcall("GET", "k"); server.call('SET', 'k', 'v') return server.pcall('PING')`,
		"return redis.call('SET', KEYS[1], redis.call('GET', KEYS[2]) .. f(1, {2, 3}))",
		"-- redis.call('DEL', 'x')\n--[==[ c ]==]\nlocal s = \"a\\\"b\" .. [[x]] return redis.call('type', s)",
		"#!lua name=lib\nredis.register_function('f', function(keys, args) return redis.call('INCRBY', keys[1], 0x1p4) end)",
		"return redis.call(cmd)", "return redis.call'GET'", "redis.call(", "[==[", "'\\", "--[[",
		"#!lua name=l\nredis.register_function{function_name='p', callback=function(k) return redis.call('GET', k[1]) end, flags={'no-writes'}}",
		"local function f(k, a) return server.call('INCR', k[1]) end\nserver.register_function({function_name = \"F\"; callback = f})",
		"redis.register_function(n, f)", "redis.register_function('f', function() end", "redis.register_function{",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		calls, err := luaCalls(src)
		if err != nil {
			checkRegistrations(t, src)
			return
		}
		for i, c := range calls {
			if c.nameStart < 1 || c.nameEnd > len(src) || c.close >= len(src) || src[c.close] != ')' {
				t.Fatalf("site %d of %q: bad positions %+v", i, src, c)
			}
			renamed := src[:c.nameStart] + "KAVACH" + src[c.nameEnd:]
			again, err := luaCalls(renamed)
			if err != nil {
				t.Fatalf("%q renamed at site %d: %v", src, i, err)
			}
			if len(again) != len(calls) {
				t.Fatalf("%q renamed at site %d: %d sites, want %d", src, i, len(again), len(calls))
			}
			for j := range calls {
				want := calls[j].name
				if j == i {
					want = "KAVACH"
				}
				// An argument holding the renamed site holds it renamed.
				var args []string
				for _, a := range calls[j].args {
					if a[0] <= c.nameStart && c.nameEnd <= a[1] {
						args = append(args, src[a[0]:c.nameStart]+"KAVACH"+src[c.nameEnd:a[1]])
					} else {
						args = append(args, src[a[0]:a[1]])
					}
				}
				if again[j].fn != calls[j].fn || again[j].name != want || !slices.Equal(argTexts(renamed, again[j]), args) {
					t.Fatalf("%q renamed at site %d: site %d is %s(%q, %q), want %s(%q, %q)", src, i, j,
						again[j].fn, again[j].name, argTexts(renamed, again[j]), calls[j].fn, want, args)
				}
			}
		}
		checkRegistrations(t, src)
		for _, e := range siteEdits(src, calls) {
			if _, err := luaCalls(e.text); err != nil {
				t.Fatalf("%q edited (%s) to %q: %v", src, e.what, e.text, err)
			}
		}
	})
}

func argTexts(src string, c luaCall) []string {
	var out []string
	for _, a := range c.args {
		out = append(out, src[a[0]:a[1]])
	}
	return out
}

// checkRegistrations: the registration parser never panics; each
// callback it finds is inside the text; and a library it reads, wrapped
// into a script (wrapLibrary), reads again with the same registrations,
// the wrapper's own adding none.
func checkRegistrations(t *testing.T, src string) {
	regs, err := luaRegistrations(src)
	if err != nil {
		return
	}
	body := src
	if strings.HasPrefix(body, "#!") {
		_, body, _ = strings.Cut(body, "\n")
	}
	want, err := luaRegistrations(body)
	if err != nil {
		return // the #! line held what the rest needs; Redis drops it too
	}
	for _, r := range regs {
		if r.cb[0] < 0 || r.cb[1] > len(src) || r.cb[0] > r.cb[1] {
			t.Fatalf("%q: registration %q: callback at %v", src, r.name, r.cb)
		}
		wrapped := wrapLibrary(src, r)
		again, err := luaRegistrations(wrapped)
		if err != nil {
			t.Fatalf("%q wrapped for %q: %v\n%s", src, r.name, err, wrapped)
		}
		if len(again) != len(want) {
			t.Fatalf("%q wrapped for %q: %d registrations, want %d", src, r.name, len(again), len(want))
		}
		for i := range want {
			if again[i].name != want[i].name || again[i].inline != want[i].inline || again[i].noWrites != want[i].noWrites {
				t.Fatalf("%q wrapped for %q: registration %d is %+v, want %+v", src, r.name, i, again[i], want[i])
			}
		}
	}
}
