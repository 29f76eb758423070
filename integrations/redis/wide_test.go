package redis

import (
	"bytes"
	"strconv"
	"testing"
	"time"
)

// editedRequest is request with argument field+1 (Fields numbering: the
// arguments after the command's name) set to value.
func editedRequest(t *testing.T, request []byte, field int, value string) []byte {
	t.Helper()
	c, err := ParseCommand(request)
	if err != nil {
		t.Fatal(err)
	}
	args := append([][]byte{}, c.Args...)
	args[field+1] = []byte(value)
	return AppendCommand(nil, args...)
}

// TestWideSubstitutionsLeftToBeMade: value and type substitutions say
// which argument they set (Edit), and it is the one their Request sets;
// past wideRequest bytes they leave Request to be made, and only the
// first typeKeys keys get type substitutions.
func TestWideSubstitutionsLeftToBeMade(t *testing.T) {
	l := &Learned{Args: fuzzGrammar.Args, Keys: map[string]KeyRange{"ZADD": {1, 1, 1}, "MSET": {1, -1, 2}},
		Types: []TypeWrite{{Type: "hash", Write: []string{"HSET", "", "f", "v"}}}}
	small := cmd("ZADD", "z", "1", "a", "2", "b")
	subs := append((Integration{}).Values(small, l, time.Time{}), (Integration{}).Substitutions(small, l)...)
	if len(subs) == 0 {
		t.Fatal("no substitutions of a ZADD")
	}
	for _, s := range subs {
		if s.Edit == nil || s.Request == nil {
			t.Fatalf("%s: Edit %v, Request %q; want both", s.What, s.Edit, s.Request)
		}
		if want := editedRequest(t, small, s.Edit.Field, s.Edit.Value); !bytes.Equal(s.Request, want) {
			t.Errorf("%s: Request %q, its Edit makes %q", s.What, s.Request, want)
		}
	}
	args := []string{"MSET"}
	for i := 0; len(args) < 1200; i++ {
		args = append(args, "key:"+strconv.Itoa(i), strconv.Itoa(i))
	}
	wide := cmd(args...)
	if len(wide) <= wideRequest {
		t.Fatalf("request of %d bytes, want over %d", len(wide), wideRequest)
	}
	types := (Integration{}).Substitutions(wide, l)
	if len(types) != typeKeys {
		t.Errorf("%d type substitutions of %d keys, want %d (one type, the first %d keys)", len(types), len(args)/2, typeKeys, typeKeys)
	}
	for _, s := range append(types, (Integration{}).Values(wide, l, time.Time{})...) {
		if s.Edit == nil || s.Request != nil {
			t.Fatalf("%s: Edit %v, Request of %d bytes; want Edit and no Request", s.What, s.Edit, len(s.Request))
		}
	}
}
