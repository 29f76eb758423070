package replay_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

// TestPushesComeWhereRecorded: a pub/sub message the recording shows
// coming to a subscriber before its client's next event is taken in
// before that event, by every replay: attached to the step it came
// after, not to the next request on that connection, and not lost when
// the client closes the connection right after. The message is large
// (Redis writes it over several turns of its loop, the replay reads it
// over several reads), so that without the wait the close or the next
// request overtakes it every time, not only on a loaded machine (one
// contract in three hundred lost its last message under stress-ng).
func TestPushesComeWhereRecorded(t *testing.T) {
	build := redisbuild.MustBuild(t)
	payload := strings.Repeat("m", 4<<20)
	message := fmt.Sprintf("*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$%d\r\n%s\r\n", len(payload), payload)
	us := time.Microsecond
	var r recording
	r.add(1, kavach.Open, 0, nil)
	r.request(1, 1*us, "SUBSCRIBE ch", 2*us, "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n") // 1
	r.add(3, kavach.Open, 3*us, nil)
	r.request(3, 4*us, "SUBSCRIBE ch", 5*us, "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n") // 2
	r.add(2, kavach.Open, 6*us, nil)
	r.add(2, kavach.Request, 7*us, redis.AppendCommand(nil, []byte("PUBLISH"), []byte("ch"), []byte(payload))) // 3
	r.add(1, kavach.Response, 8*us, []byte(message))
	r.add(3, kavach.Response, 9*us, []byte(message))
	r.add(2, kavach.Response, 10*us, []byte(":2\r\n"))
	r.add(1, kavach.Close, 11*us, []byte("client"))
	r.request(3, 12*us, "UNSUBSCRIBE ch", 13*us, "*3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:0\r\n") // 4
	r.add(2, kavach.Close, 14*us, []byte("client"))
	r.add(3, kavach.Close, 15*us, []byte("client"))
	rec := r.sorted()

	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)
	recorded := replay.Recorded(rec, redis.Integration{})
	for run := range 6 {
		opts := options(tl)
		opts.Perturb = run%2 == 1
		tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, opts)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Stopped != "" || len(tr.Steps) != len(recorded) {
			t.Fatalf("run %d: stopped %q, %d steps, want %d", run, tr.Stopped, len(tr.Steps), len(recorded))
		}
		for _, n := range []int{1, 2} {
			got := tr.Steps[n-1].Responses
			if len(got) != 2 || !bytes.Equal(got[1], []byte(message)) {
				t.Errorf("run %d: step %d (SUBSCRIBE) got %d replies (%s), want the subscription and the message", run, n, len(got), sizes(got))
			}
		}
		if got := tr.Steps[3].Responses; len(got) != 1 {
			t.Errorf("run %d: step 4 (UNSUBSCRIBE) got %d replies (%s), want its own only", run, len(got), sizes(got))
		}
		for n := range recorded {
			if d := replay.Compare(recorded[n], tr.Steps[n]); len(d) > 0 {
				t.Errorf("run %d: step %d differs from the recording", run, n+1)
			}
		}
	}
}

// TestPushThatDoesNotCome: a push the recording has but the build does
// not send (its PUBLISH goes to a channel nobody subscribed to) is waited
// for only until the build is idle without it: the replay goes on,
// hangs nothing, and the subscriber's step lacks the message, for the
// comparison to find.
func TestPushThatDoesNotCome(t *testing.T) {
	build := redisbuild.MustBuild(t)
	us := time.Microsecond
	var r recording
	r.add(1, kavach.Open, 0, nil)
	r.request(1, 1*us, "SUBSCRIBE ch", 2*us, "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n") // 1
	r.add(2, kavach.Open, 3*us, nil)
	r.request(2, 4*us, "PUBLISH elsewhere hello", 6*us, ":1\r\n") // 2
	r.add(1, kavach.Response, 5*us, []byte("*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n"))
	r.add(1, kavach.Close, 7*us, []byte("client"))
	r.request(2, 8*us, "PING", 9*us, "+PONG\r\n") // 3
	rec := r.sorted()

	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)
	recorded := replay.Recorded(rec, redis.Integration{})
	// A wait that ran to the step timeout would be a hang in all but name:
	// with a long one, finishing well within it says the wait ended on the
	// build's idleness (a bound on a hang, not a measure of speed).
	opts := options(tl)
	opts.StepTimeout = 2 * time.Minute
	began := time.Now()
	tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, opts)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Stopped != "" || len(tr.Steps) != 3 {
		t.Fatalf("stopped %q, %d steps: want all 3 run", tr.Stopped, len(tr.Steps))
	}
	if got := tr.Steps[0].Responses; len(got) != 1 {
		t.Errorf("step 1 (SUBSCRIBE) got %d replies (%s), want the subscription only", len(got), sizes(got))
	}
	if d := replay.Compare(recorded[0], tr.Steps[0]); len(d) == 0 {
		t.Error("step 1 equals the recording without the message")
	}
	if got := reply(tr, 3); got != "PONG" {
		t.Errorf("step 3 = %s, want PONG", got)
	}
	if d := time.Since(began); d > time.Minute {
		t.Errorf("the replay took %s: the missing push was waited for until the step timeout", d)
	}
}

// sizes describes replies by their lengths.
func sizes(replies [][]byte) string {
	var b strings.Builder
	for i, r := range replies {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d bytes", len(r))
	}
	return b.String()
}
