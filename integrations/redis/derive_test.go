package redis

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kavach-dev/kavach"
)

// Families derived from a real build's COMMAND DOCS: the commands of one
// group with the same grammar, none of them in the table of families.
func TestDerivedFamiliesFromCommandDocs(t *testing.T) {
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	commands := []string{"SINTERSTORE", "LPUSH", "GET", "ZUNIONSTORE", "DEL", "INCRBY", "INCR", "DBSIZE", "SINTERCARD", "HSETNX", "XADD"}
	s, err := Integration{}.Learn(t.Context(), p.Addr(), commands)
	if err != nil {
		t.Fatal(err)
	}
	l := s.(*Learned)
	got := map[string]string{}
	for c, d := range l.Derived {
		got[c] = d.Group + ": " + strings.Join(d.Members, " ")
	}
	want := map[string]string{
		"SINTERSTORE": "set: SDIFFSTORE SINTERSTORE SUNIONSTORE",
		"LPUSH":       "list: LPUSH LPUSHX RPUSH RPUSHX",
		// INCR and DECR share GET's grammar and group, but the table's
		// numeric increments have them: the table wins.
		"GET":         "string: GET GETDEL STRLEN",
		"ZUNIONSTORE": "sorted-set: ZINTERSTORE ZUNIONSTORE",
		"DEL":         "generic: DEL EXISTS TOUCH UNLINK",
		// INCRBY and INCR are the table's, and so are the other members
		// of their family, asked too; DBSIZE has no arguments;
		// SINTERCARD, HSETNX and XADD share their grammar with no other
		// command of their group.
	}
	for c := range got {
		if _, fixed := FamilyOf(c); fixed {
			t.Errorf("%s is in the table and got a derived family too: %s", c, got[c])
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("derived families (-want +got):\n%s", diff)
	}
	// Derived members are asked about as the fixture's commands are.
	for _, m := range []string{"SUNIONSTORE", "SDIFFSTORE", "RPUSHX", "GETDEL"} {
		if !l.Commands[m] || l.Args[m] == nil {
			t.Errorf("derived member %s not learned: has %v, arguments %+v", m, l.Commands[m], l.Args[m])
		}
	}

	// A sibling of a derived family: the same arguments under another
	// name, described by the group it was derived from.
	subs, skipped := (Integration{}).Siblings(cmd("SINTERSTORE", "tags", "tags", "wanted"), l)
	var whats []string
	for _, sub := range subs {
		whats = append(whats, sub.What)
		c, err := ParseCommand(sub.Request)
		if err != nil || len(sub.Setup) != 0 || len(c.Args) != 4 || string(c.Args[1]) != "tags" || string(c.Args[3]) != "wanted" {
			t.Errorf("%s: request %s, setup %q", sub.What, c, sub.Setup)
		}
	}
	if diff := cmp.Diff([]string{
		"SINTERSTORE → SDIFFSTORE tags tags wanted (derived from COMMAND DOCS group set)",
		"SINTERSTORE → SUNIONSTORE tags tags wanted (derived from COMMAND DOCS group set)",
	}, whats); diff != "" || len(skipped) != 0 {
		t.Errorf("siblings (-want +got):\n%s\nskipped %v", diff, skipped)
	}
	// A command of the table gets the table's siblings only.
	subs, _ = (Integration{}).Siblings(cmd("INCR", "counter"), l)
	for _, sub := range subs {
		if strings.Contains(sub.What, "derived") || strings.Contains(sub.What, "→ GET") {
			t.Errorf("INCR: a derived sibling: %s", sub.What)
		}
	}
}

// The grammar two commands must share: names, types, tokens and flags,
// nested, in order; summaries and key spec indexes do not count.
func TestGrammarKey(t *testing.T) {
	arg := func(kv ...any) Value {
		var v Value
		for _, x := range kv {
			switch x := x.(type) {
			case string:
				v.Elems = append(v.Elems, Value{Str: []byte(x)})
			case Value:
				v.Elems = append(v.Elems, x)
			}
		}
		return v
	}
	list := func(vs ...Value) Value { return Value{Elems: vs} }
	key := func(a Value) string {
		var b strings.Builder
		grammarKey(&b, a)
		return b.String()
	}
	base := list(arg("name", "key", "type", "key", "key_spec_index", "0"), arg("name", "count", "type", "integer", "flags", arg("optional")))
	same := list(arg("name", "key", "type", "key", "key_spec_index", "1", "summary", "other words"), arg("name", "count", "type", "integer", "flags", arg("optional")))
	if key(base) != key(same) {
		t.Errorf("summary and key spec index changed the grammar: %s vs %s", key(base), key(same))
	}
	for _, other := range []Value{
		list(arg("name", "key", "type", "key"), arg("name", "count", "type", "integer")),                                             // not optional
		list(arg("name", "key", "type", "key"), arg("name", "count", "type", "integer", "token", "COUNT", "flags", arg("optional"))), // a token
		list(arg("name", "key", "type", "key"), arg("name", "num", "type", "integer", "flags", arg("optional"))),                     // another name
		list(arg("name", "count", "type", "integer", "flags", arg("optional")), arg("name", "key", "type", "key")),                   // another order
		list(arg("name", "key", "type", "key")),
	} {
		if key(other) == key(base) {
			t.Errorf("%s: the same grammar as %s", key(other), key(base))
		}
	}
}
