package kavach

import (
	"testing"
	"unicode/utf8"
)

func TestMaskError(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"value is not an integer or out of range", "value is not an integer or out of range"},
		{"wrong number of arguments for 'incrby' command", "wrong number of arguments for '*' command"},
		{"unknown command 'FOO', with args beginning with: 'a' 'b' ", "unknown command '*', with args beginning with: '*' '*'"},
		{"Error running script (call to f_2c4a1b): @user_script:1: boom", "Error running script (call to # # boom"},
		{"max number of clients reached  ", "max number of clients reached"},
		{`unbalanced "quote`, `unbalanced "*"`},
	} {
		if got := MaskError(tc.in); got != tc.want {
			t.Errorf("MaskError(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Two errors of one kind, one signature; two kinds, two.
	a := ErrorSignature(Outcome{Kind: Error, Class: "ERR", Detail: "ERR wrong number of arguments for 'get' command"})
	b := ErrorSignature(Outcome{Kind: Error, Class: "ERR", Detail: "ERR wrong number of arguments for 'set' command"})
	c := ErrorSignature(Outcome{Kind: Error, Class: "ERR", Detail: "ERR value is not an integer or out of range"})
	if a != b || a == c || c != "error:ERR value is not an integer or out of range" {
		t.Errorf("signatures %q %q %q", a, b, c)
	}
	o, err := ParseOracle(c)
	if err != nil || !o.Fires(Outcome{Kind: Error, Class: "ERR", Detail: "ERR value is not an integer or out of range"}) ||
		o.Fires(Outcome{Kind: Error, Class: "ERR", Detail: "ERR wrong number of arguments for 'get' command"}) {
		t.Errorf("oracle %+v, %v: fires on the wrong errors", o, err)
	}
	if loose, _ := ParseOracle("error:ERR"); !loose.Fires(Outcome{Kind: Error, Class: "ERR", Detail: "ERR anything"}) || loose.String() != "error:ERR" {
		t.Errorf("loose oracle %+v", loose)
	}
}

func FuzzMaskError(f *testing.F) {
	for _, s := range []string{"", "ERR x", "wrong number of arguments for 'incrby' command", `a "b c" 12 d4`, "'", "\"\"\"", "x\ty\nz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m := MaskError(s)
		if MaskError(m) != m {
			t.Errorf("MaskError is not idempotent on %q: %q then %q", s, m, MaskError(m))
		}
		if utf8.ValidString(s) && !utf8.ValidString(m) {
			t.Errorf("MaskError(%q) = %q: invalid UTF-8", s, m)
		}
		// A signature made of it reads back as itself.
		sig := ErrorSignature(Outcome{Kind: Error, Class: "ERR", Detail: "ERR " + s})
		if o, err := ParseOracle(sig); err != nil || o.String() != sig {
			t.Errorf("signature %q reads back as %q (%v)", sig, o.String(), err)
		}
	})
}
