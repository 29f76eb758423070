package redis

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
)

// Each mode is turned the other way from where the connection's earlier
// requests left it; CLIENT NO-TOUCH only where the build has it, as the
// build itself says (Debian's 7.0 has CLIENT NO-EVICT, not NO-TOUCH).
func TestModes(t *testing.T) {
	modes := func(schema kavach.Schema, earlier ...[]string) []string {
		var reqs [][]byte
		for _, e := range earlier {
			reqs = append(reqs, command(e))
		}
		var out []string
		for _, m := range (Integration{}).Modes(command([]string{"GET", "k"}), reqs, schema) {
			out = append(out, Integration{}.DescribeRequest(m.Request, 0))
		}
		return out
	}
	for _, c := range []struct {
		earlier [][]string
		want    []string
	}{
		{nil, []string{`HELLO "3"`, `CLIENT "NO-TOUCH" "ON"`}},
		{[][]string{{"hello", "3"}}, []string{`HELLO "2"`, `CLIENT "NO-TOUCH" "ON"`}},
		{[][]string{{"HELLO", "3"}, {"HELLO", "2"}, {"CLIENT", "no-touch", "on"}}, []string{`HELLO "3"`, `CLIENT "NO-TOUCH" "OFF"`}},
		{[][]string{{"HELLO", "3"}, {"CLIENT", "NO-TOUCH", "ON"}, {"RESET"}}, []string{`HELLO "3"`, `CLIENT "NO-TOUCH" "ON"`}},
		{[][]string{{"HELLO"}}, []string{`HELLO "3"`, `CLIENT "NO-TOUCH" "ON"`}}, // HELLO alone changes nothing
	} {
		if got := modes(nil, c.earlier...); !slices.Equal(got, c.want) {
			t.Errorf("after %v: modes %q, want %q", c.earlier, got, c.want)
		}
	}

	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if v := (Integration{}).Version(context.Background(), p.Addr()); !strings.HasPrefix(v, "redis 7.0.") {
		t.Fatalf("redis-server is %q: want Debian's 7.0 (scripts/deps.sh installs it)", v)
	}
	s, err := Integration{}.Learn(context.Background(), p.Addr(), []string{"GET"})
	if err != nil {
		t.Fatal(err)
	}
	l := s.(*Learned)
	if !hasCommand(l, "CLIENT|NO-EVICT") || hasCommand(l, "CLIENT|NO-TOUCH") {
		t.Errorf("Debian's 7.0 build: CLIENT|NO-EVICT %v, CLIENT|NO-TOUCH %v; want it to have the first only", hasCommand(l, "CLIENT|NO-EVICT"), hasCommand(l, "CLIENT|NO-TOUCH"))
	}
	if got := modes(s); !slices.Equal(got, []string{`HELLO "3"`}) {
		t.Errorf("modes on Debian's 7.0 build: %q, want HELLO 3 only", got)
	}
	// NO-TOUCH changes what a request on keys does, nothing else: not
	// offered for PING, as the build says PING names no key.
	l.Keys["CLIENT|NO-TOUCH"] = KeyRange{}
	for req, want := range map[string]int{"GET": 2, "PING": 1} {
		if got := (Integration{}).Modes(command([]string{req, "x"}), nil, l); len(got) != want {
			t.Errorf("%s: %d modes, want %d", req, len(got), want)
		}
	}
	if got := (Integration{}).Modes(command([]string{"PING"}), nil, nil); len(got) != 1 {
		t.Errorf("PING with no argument, no build asked: %d modes, want HELLO only", len(got))
	}
}
