package redis

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
)

func commands(reqs ...[]string) func(yield func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for _, r := range reqs {
			b := make([][]byte, len(r))
			for i, a := range r {
				b[i] = []byte(a)
			}
			if !yield(AppendCommand(nil, b...)) {
				return
			}
		}
	}
}

// TestFingerprintLaunch: debug commands are allowed for the probe unless
// the recording decided it (its launch names the directive, or it sends
// DEBUG itself, which allowing would change).
func TestFingerprintLaunch(t *testing.T) {
	path := redisServer(t)
	l, why := Integration{}.FingerprintLaunch(kavach.Launch{Path: path, Args: []string{"--hz", "100"}}, commands([]string{"SET", "k", "v"}))
	if why != "" || !slices.Equal(l.Args, []string{"--hz", "100", "--enable-debug-command", "local"}) {
		t.Errorf("plain recording: args %q, reason %q", l.Args, why)
	}
	l, why = Integration{}.FingerprintLaunch(kavach.Launch{Path: path, Args: []string{"--enable-debug-command", "yes"}}, commands([]string{"DEBUG", "SLEEP", "0"}))
	if why != "" || !slices.Equal(l.Args, []string{"--enable-debug-command", "yes"}) {
		t.Errorf("recording that allows DEBUG: args %q, reason %q", l.Args, why)
	}
	l, why = Integration{}.FingerprintLaunch(kavach.Launch{Path: path}, commands([]string{"GET", "k"}, []string{"debug", "object", "k"}))
	if why == "" || len(l.Args) != 0 {
		t.Errorf("recording that sends DEBUG without allowing it: args %q, reason %q; want none and a reason", l.Args, why)
	}
}

// TestProbeOnRealServer: the probe reads type and value, encoding, expiry
// and the access clock of the keys asked, per connection's database, and
// the whole keyspace's digest; reading them is no access (the key's idle
// time goes on growing) and changes nothing.
func TestProbeOnRealServer(t *testing.T) {
	l, why := Integration{}.FingerprintLaunch(kavach.Launch{Path: redisServer(t)}, commands())
	if why != "" {
		t.Fatal(why)
	}
	p, err := Integration{}.Start(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	ctx := context.Background()
	do := func(args ...string) Value {
		t.Helper()
		v, err := call(ctx, p.Addr(), args...)
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		return v
	}
	// call opens a connection per command: database 2 is written with a
	// MULTI of its own connection.
	do("SET", "k", "hello")
	do("RPUSH", "l", "a", "b")
	do("SET", "t", "x", "PX", "600000")

	pr := Integration{}.NewProbe(p.Addr(), 2*time.Second)
	defer pr.Close()
	fp, err := pr.Fingerprint(1, []string{"k", "l", "t", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if fp["db"] != "0" || fp["missing digest"] != "none" || fp["k digest"] == "none" || fp["k encoding"] != "embstr" ||
		!slices.Contains([]string{"quicklist", "listpack"}, fp["l encoding"]) || fp["k expire"] != "-1" || strings.HasPrefix(fp["t expire"], "-") || fp["k access"] == "" {
		t.Errorf("fingerprint = %v", fp)
	}
	if _, ok := fp["missing expire"]; ok {
		t.Errorf("a missing key has only its digest: %v", fp)
	}

	// The same state gives the same fingerprint; a changed value another.
	again, _ := pr.Fingerprint(1, []string{"missing", "t", "l", "k"})
	for _, f := range []string{"k digest", "l digest", "t digest", "t expire"} {
		if again[f] != fp[f] {
			t.Errorf("%s: %q then %q with nothing changed", f, fp[f], again[f])
		}
	}
	do("RPUSH", "l", "c")
	if changed, _ := pr.Fingerprint(1, []string{"l"}); changed["l digest"] == fp["l digest"] {
		t.Error("a list pushed to kept its digest")
	}

	// The whole keyspace when the keys are unknown.
	all, err := pr.Fingerprint(1, nil)
	if err != nil || len(all) != 1 || all["* digest"] == "" {
		t.Fatalf("whole keyspace: %v, %v", all, err)
	}
	do("SET", "other", "1")
	if all2, _ := pr.Fingerprint(1, nil); all2["* digest"] == all["* digest"] {
		t.Error("the keyspace digest did not change with a new key")
	}

	// A connection that SELECTed database 2 is fingerprinted there.
	pr.Sent(7, AppendCommand(nil, []byte("SELECT"), []byte("2")))
	do("EVAL", "redis.call('SELECT', 2); redis.call('SET', 'k', 'in two'); return 1", "0")
	in2, _ := pr.Fingerprint(7, []string{"k"})
	in0, _ := pr.Fingerprint(8, []string{"k"})
	if in2["db"] != "2" || in0["db"] != "0" || in2["k digest"] == in0["k digest"] {
		t.Errorf("database 2: %v; database 0: %v", in2, in0)
	}

	// Reading is no access: after two seconds the key is still idle.
	time.Sleep(2200 * time.Millisecond)
	if _, err := pr.Fingerprint(1, []string{"k"}); err != nil {
		t.Fatal(err)
	}
	if idle := do("OBJECT", "IDLETIME", "k"); idle.Int < 1 {
		t.Errorf("OBJECT IDLETIME after the probe = %d: the probe touched the key", idle.Int)
	}
	if hits := do("DBSIZE"); hits.Int != 4 {
		t.Errorf("DBSIZE = %d, want 4: the probe changed the keyspace", hits.Int)
	}
}

// TestProbeWithoutDebug: a build that refuses DEBUG gives no fingerprint,
// an error, never a fingerprint of the refusal.
func TestProbeWithoutDebug(t *testing.T) {
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	pr := Integration{}.NewProbe(p.Addr(), 2*time.Second)
	defer pr.Close()
	if fp, err := pr.Fingerprint(1, []string{"k"}); err == nil {
		t.Errorf("fingerprint %v with DEBUG refused, want an error", fp)
	}
}

// A key's digest is its content; its access clock and encoding are how
// the build keeps it, and differ between two replays of one build.
func TestFingerprintContent(t *testing.T) {
	for field, want := range map[string]bool{"stock digest": true, "* digest": true, "stock access": false, "stock encoding": false, "digest": false} {
		if got := FingerprintContent(field); got != want {
			t.Errorf("FingerprintContent(%q) = %v, want %v", field, got, want)
		}
	}
}
