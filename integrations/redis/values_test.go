package redis

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// values are the requests of Values, each as "kind | request".
func values(l *Learned, at time.Time, args ...string) []string {
	var out []string
	for _, s := range (Integration{}).Values(cmd(args...), l, at) {
		out = append(out, s.Kind+" | "+Integration{}.DescribeRequest(s.Request, 0))
	}
	return out
}

func wantValues(t *testing.T, got []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("no %s among %d values:\n%s", w, len(got), strings.Join(got, "\n"))
		}
	}
}

func wantNoValues(t *testing.T, got []string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		for _, g := range got {
			if strings.Contains(g, w) {
				t.Errorf("%s: want none with %s", g, w)
			}
		}
	}
}

// Numbers in every form, typed by the build's COMMAND DOCS: a double gets
// inf and nan, an integer does not; a script's ARGV is varied, its
// numkeys and keys are not.
func TestValuesNumberForms(t *testing.T) {
	l := learn(t, "INCRBYFLOAT", "INCRBY", "EVAL", "SET")
	got := values(l, time.Time{}, "INCRBYFLOAT", "balance", "-3")
	wantValues(t, got,
		`number-form | INCRBYFLOAT "balance" "-3.0"`, `number-form | INCRBYFLOAT "balance" "-3e0"`,
		`number-form | INCRBYFLOAT "balance" "-03"`, `number-form | INCRBYFLOAT "balance" "-3.5"`,
		`number-form | INCRBYFLOAT "balance" "-2.5"`, `number-form | INCRBYFLOAT "balance" "-1e3"`,
		`number-form | INCRBYFLOAT "balance" "-2.5e+10"`, `number-form | INCRBYFLOAT "balance" "-1e300"`,
		`number-form | INCRBYFLOAT "balance" "-0"`, `number-form | INCRBYFLOAT "balance" "inf"`,
		`number-form | INCRBYFLOAT "balance" "nan"`, `number-form | INCRBYFLOAT "balance" "9007199254740993"`,
		`number-form | INCRBYFLOAT "balance" "-9223372036854775808"`, `number-form | INCRBYFLOAT "balance" "2147483649"`)
	wantNoValues(t, got, `"balance" "-3"`, `INCRBYFLOAT "`+"kavach") // the recorded value itself; keys are not numbers

	got = values(l, time.Time{}, "INCRBY", "counter", "5")
	wantValues(t, got, `number-form | INCRBY "counter" "+5"`, `number-form | INCRBY "counter" "5.0"`, `number-form | INCRBY "counter" "4.5"`)
	wantNoValues(t, got, `"inf"`, `"nan"`)

	// A fraction: the same value written with a trailing zero and an exponent.
	got = values(l, time.Time{}, "INCRBYFLOAT", "balance", "2.5")
	wantValues(t, got, `number-form | INCRBYFLOAT "balance" "2.50"`, `number-form | INCRBYFLOAT "balance" "25e-1"`, `number-form | INCRBYFLOAT "balance" "2"`)

	got = values(l, time.Time{}, "EVAL", "return redis.call('INCRBY', KEYS[1], ARGV[1])", "1", "12", "-3", "apples")
	wantValues(t, got, `number-form | EVAL "return redis.call('INCRBY', KEYS[1], ARGV[1])" "1" "12" "-3.0" "apples"`)
	for _, g := range got {
		if !strings.HasSuffix(g, `"apples"`) || !strings.Contains(g, `"1" "12"`) {
			t.Errorf("%s: only ARGV[1] is a number to vary (not numkeys, not the key 12, not apples)", g)
		}
	}

	// A string that is written as a number is one (SET counter 10).
	got = values(l, time.Time{}, "SET", "counter", "10")
	wantValues(t, got, `number-form | SET "counter" "10.0"`)
	if got := values(l, time.Time{}, "SET", "greeting", "hello"); len(got) != 0 {
		t.Errorf("SET greeting hello: %q, want no values", got)
	}
}

// Structured values, part by part, written back exactly.
func TestValuesStructured(t *testing.T) {
	l := learn(t, "XADD", "XRANGE", "ZRANGEBYSCORE", "ZRANGE", "ZRANGEBYLEX", "SETBIT", "GETBIT", "SETRANGE", "EXPIRE", "EXPIREAT", "SET")
	got := values(l, time.Time{}, "XADD", "events", "18446744073709551615-1", "name", "omega")
	wantValues(t, got,
		`structured | XADD "events" "18446744073709551615-18446744073709551615" "name" "omega"`, // seq to its largest, ms kept
		`structured | XADD "events" "18446744073709551615-9223372036854775808" "name" "omega"`,
		`structured | XADD "events" "18446744073709551615-0" "name" "omega"`,
		`structured | XADD "events" "0-1" "name" "omega"`, // ms to zero, seq kept
		`structured | XADD "events" "18446744073709551616-1" "name" "omega"`,
		`structured | XADD "events" "18446744073709551614-1" "name" "omega"`,
		`structured | XADD "events" "*" "name" "omega"`,
		`structured | XADD "events" "18446744073709551615" "name" "omega"`,
		`structured | XADD "events" "18446744073709551615-*" "name" "omega"`,
		`structured | XADD "events" "-1" "name" "omega"`)
	wantNoValues(t, got, `"events" "18446744073709551615-1"`, `"nam`+`e" "omega" "`)

	got = values(l, time.Time{}, "XRANGE", "events", "-", "1-5")
	wantValues(t, got, `structured | XRANGE "events" "+" "1-5"`, `structured | XRANGE "events" "-" "(1-5"`, `structured | XRANGE "events" "-" "1-18446744073709551615"`)

	got = values(l, time.Time{}, "ZRANGEBYSCORE", "z", "(1", "+inf")
	wantValues(t, got, `structured | ZRANGEBYSCORE "z" "1" "+inf"`, `structured | ZRANGEBYSCORE "z" "-inf" "+inf"`,
		`structured | ZRANGEBYSCORE "z" "(+inf" "+inf"`, `structured | ZRANGEBYSCORE "z" "(1" "(+inf"`, `structured | ZRANGEBYSCORE "z" "(1e0" "+inf"`)
	got = values(l, time.Time{}, "ZRANGE", "z", "[a", "(c", "BYLEX")
	wantValues(t, got, `structured | ZRANGE "z" "(a" "(c" "BYLEX"`, `structured | ZRANGE "z" "-" "(c" "BYLEX"`, `structured | ZRANGE "z" "[a" "[c" "BYLEX"`)
	got = values(l, time.Time{}, "ZRANGEBYLEX", "z", "-", "[m")
	wantValues(t, got, `structured | ZRANGEBYLEX "z" "-" "+"`, `structured | ZRANGEBYLEX "z" "-" "["`)
	// ZRANGE without BYSCORE or BYLEX takes indexes: numbers, not bounds.
	wantNoValues(t, values(l, time.Time{}, "ZRANGE", "z", "0", "-1"), "structured")

	// Offsets: the other unit, the byte's edges; a write is never sent
	// to the largest offset (512 MB), only past it.
	got = values(l, time.Time{}, "SETBIT", "bits", "9", "1")
	wantValues(t, got, `structured | SETBIT "bits" "1" "1"`, `structured | SETBIT "bits" "15" "1"`, `structured | SETBIT "bits" "4294967296" "1"`)
	wantNoValues(t, got, `"4294967295"`)
	wantValues(t, values(l, time.Time{}, "GETBIT", "bits", "9"), `structured | GETBIT "bits" "4294967295"`)
	wantValues(t, values(l, time.Time{}, "SETRANGE", "s", "3", "x"), `structured | SETRANGE "s" "24" "x"`, `structured | SETRANGE "s" "536870912" "x"`)

	// Durations and Unix times, by their documented names and types.
	wantValues(t, values(l, time.Time{}, "EXPIRE", "k", "100"), `structured | EXPIRE "k" "100000"`, `structured | EXPIRE "k" "9223372036854776"`)
	wantValues(t, values(l, time.Time{}, "SET", "k", "v", "PX", "1500"), `structured | SET "k" "v" "PX" "1"`, `structured | SET "k" "v" "PX" "9223372036854775807"`)
	at := time.Unix(1700000000, 0)
	got = values(l, at, "EXPIREAT", "k", "1800000000")
	wantValues(t, got, `structured | EXPIREAT "k" "1700000000"`, `structured | EXPIREAT "k" "1699999999"`, `structured | EXPIREAT "k" "1"`, `structured | EXPIREAT "k" "253402300799"`)
	wantValues(t, values(l, at, "SET", "k", "v", "PXAT", "1800000000000"), `structured | SET "k" "v" "PXAT" "1700000000000"`)
	// Without the time the build saw, no "now".
	wantNoValues(t, values(l, time.Time{}, "EXPIREAT", "k", "1800000000"), `"1700000000"`)
}

// Each parser writes back exactly what it parsed.
func FuzzStructured(f *testing.F) {
	for _, s := range []string{"-3", "+2.5e+10", "1.", ".5", "1e", "0x10", "18446744073709551615-1", "(1-2", "5-*", "*", "(+", "5-", "-1",
		"(1.5", "-inf", "(+inf", "inf", "[abc", "(", "-", "+", "", "1e-3", "--1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, ok := ParseNumber(s); ok && n.String() != s {
			t.Errorf("ParseNumber(%q) writes back %q", s, n.String())
		}
		if id, ok := ParseStreamID(s); ok {
			if id.String() != s {
				t.Errorf("ParseStreamID(%q) writes back %q", s, id.String())
			}
			for _, f := range streamIDForms(id) {
				if f.value == "" {
					t.Errorf("%q: an empty form (%s)", s, f.what)
				}
			}
		}
		if b, ok := ParseScoreBound(s); ok && b.String() != s {
			t.Errorf("ParseScoreBound(%q) writes back %q", s, b.String())
		}
		if b, ok := ParseLexBound(s); ok && b.String() != s {
			t.Errorf("ParseLexBound(%q) writes back %q", s, b.String())
		}
		for _, fm := range numberForms(s, true) {
			if _, ok := ParseNumber(fm.value); !ok && !isInf(fm.value) && fm.value != "nan" {
				t.Errorf("%q: form %q (%s) is not a number", s, fm.value, fm.what)
			}
		}
	})
}

// Any request: no panic, and every value variant the same command with
// one argument changed, of a value kind; a runner variant the same
// arguments after the script, another runner.
func FuzzValues(f *testing.F) {
	for _, s := range []string{"SET k 10 EX 10", "ZADD z XX 1 a 2 b", "XADD s 1-1 f v", "XRANGE s - +", "ZRANGE z (1 5 BYSCORE",
		"EVAL x 1 k 5", "EVAL x -1 5", "BITCOUNT k 0 -1 BIT", "BITPOS k BIT 0 1", "SETBIT k 9223372036854775807 1", "EXPIRE k 99999999999999999999",
		"EVAL return(redis.call('HINCRBY',KEYS[1],ARGV[1],ARGV[2])) 1 h f -3", "EVAL_RO return(redis.pcall('get',KEYS[1])) 1 k",
		"FUNCTION LOAD redis.register_function('f',function(k,a)return(redis.call('SET',k[1],a[1]))end)",
		"FUNCTION LOAD redis.register_function{function_name='f',callback=function(k)return(redis.call('GET',k[1]))end,flags={'no-writes'}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words := strings.Fields(s)
		if len(words) == 0 {
			return
		}
		for _, v := range (Integration{}).Values(cmd(words...), fuzzGrammar, time.Unix(1700000000, 0)) {
			c, err := ParseCommand(v.Request)
			if v.Kind == "runner" {
				rest := words[2:]
				if strings.EqualFold(words[0], "FUNCTION") {
					rest = []string{"0"} // a library's function: no keys, no arguments
				}
				if err != nil || !scriptRunners[c.Name] || c.Name == strings.ToUpper(words[0]) || len(c.Args) != len(rest)+2 ||
					!slices.Equal(argStrings(c.Args[2:]), rest) {
					t.Fatalf("%q: runner %q (%s) is not another runner with the same arguments: %v", s, v.Request, v.What, err)
				}
				continue
			}
			if err != nil || !strings.EqualFold(c.Name, words[0]) || len(c.Args) != len(words) {
				t.Fatalf("%q: value %q (%s) is not a %s command of %d arguments: %v", s, v.Request, v.What, words[0], len(words), err)
			}
			changed := 0
			for i, a := range c.Args {
				if string(a) != words[i] {
					changed++
				}
			}
			if changed != 1 || (v.Kind != "number-form" && v.Kind != "structured" && v.Kind != "script-site") || v.Group == "" {
				t.Fatalf("%q: value %q (%s, %s) changes %d arguments", s, v.Request, v.Kind, v.What, changed)
			}
		}
		// The same script loaded first and run by EVALSHA: as many site
		// variants, each the changed script loaded by SCRIPT LOAD and run
		// by its own sha1 with the same arguments.
		if strings.EqualFold(words[0], "EVAL") && len(words) >= 3 {
			sites := 0
			for _, v := range (Integration{}).Values(cmd(words...), fuzzGrammar, time.Time{}) {
				if v.Kind == "script-site" {
					sites++
				}
			}
			after := (Integration{}).After([][]byte{cmd("SCRIPT", "LOAD", words[1])})
			evalsha := append([]string{"EVALSHA", sha1Hex([]byte(words[1]))}, words[2:]...)
			for _, v := range after.Values(cmd(evalsha...), fuzzGrammar, time.Time{}) {
				if v.Kind != "script-site" {
					continue
				}
				sites--
				load, err1 := ParseCommand(v.Setup[0])
				c, err2 := ParseCommand(v.Request)
				if err1 != nil || err2 != nil || len(v.Setup) != 1 || load.Name != "SCRIPT" || len(load.Args) != 3 ||
					c.Name != "EVALSHA" || string(c.Args[1]) != sha1Hex(load.Args[2]) || !slices.Equal(argStrings(c.Args[2:]), words[2:]) {
					t.Fatalf("%q as EVALSHA: site variant %q after %q (%s)", s, v.Request, v.Setup, v.What)
				}
			}
			if sites != 0 {
				t.Fatalf("%q: EVALSHA has %d site variants fewer than EVAL", s, sites)
			}
		}
	})
}
