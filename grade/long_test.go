package grade_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/gradetest"
	"github.com/kavach-dev/kavach/replay"
)

// longIncident is the GETRANGE incident recorded on the old build, after
// a prefix of prefix steps on another connection: SETs and GETs, at step
// strlenAt a STRLEN (which the strlen build answers wrongly), and 100
// steps before its end a script naming no key.
func longIncident(t *testing.T, old string, prefix, strlenAt int) *fixtures.Fixture {
	t.Helper()
	fx := recordIncident(t, old)
	var evs []kavach.Event
	var off time.Duration
	add := func(dir kavach.Direction, data string) {
		off += 20 * time.Microsecond
		evs = append(evs, kavach.Event{Seq: uint64(len(evs) + 1), Conn: 1 << 20, Dir: dir, Offset: off, Data: []byte(data)})
	}
	cmd := func(a ...string) string {
		b := make([][]byte, len(a))
		for i := range a {
			b[i] = []byte(a[i])
		}
		return string(redis.AppendCommand(nil, b...))
	}
	add(kavach.Open, "")
	for i := 1; i <= prefix; i++ {
		key := "key:" + strconv.Itoa((i-1)/2) // SET at odd steps, GET of it next
		switch {
		case i == strlenAt:
			add(kavach.Request, cmd("STRLEN", "key:0"))
			add(kavach.Response, ":7\r\n")
		case i == prefix-100:
			// A script naming no key may read and write any: every write
			// before it is in the failing step's dependency slice, which
			// is then too long, and the variants use the window.
			add(kavach.Request, cmd("EVAL", "return 1", "0"))
			add(kavach.Response, ":1\r\n")
		case i%2 == 1:
			add(kavach.Request, cmd("SET", key, "value-"+strconv.Itoa(i)))
			add(kavach.Response, "+OK\r\n")
		default:
			v := "value-" + strconv.Itoa(i-1)
			add(kavach.Request, cmd("GET", key))
			add(kavach.Response, fmt.Sprintf("$%d\r\n%s\r\n", len(v), v))
		}
	}
	add(kavach.Close, "client")
	for _, ev := range fx.Events {
		ev.Seq += uint64(len(evs))
		ev.Offset += off
		evs = append(evs, ev)
	}
	f := *fx.Failure
	f.Step += prefix
	return &fixtures.Fixture{Path: fx.Path, Header: fx.Header, Events: evs, Failure: &f}
}

// writeFixture writes fx to a file and returns it opened as a long
// recording, summarized once: graded from the file, as kavach diff grades
// a long fixture.
func writeFixture(t *testing.T, fx *fixtures.Fixture) *fixtures.Recording {
	t.Helper()
	path := filepath.Join(t.TempDir(), "long.kavach")
	w, err := fixtures.Create(path, fx.Header)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Events(fx.Events); err != nil {
		t.Fatal(err)
	}
	if err := w.Failure(*fx.Failure); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(fixtures.End{Duration: fx.Events[len(fx.Events)-1].Offset}); err != nil {
		t.Fatal(err)
	}
	rec, err := fixtures.StreamRecording(path, redis.Integration{})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

var stepNumber = regexp.MustCompile(`\bstep (\d+)`)

// A long recording is graded with its equal steps before the window
// counted, not listed, and its variants made from and replayed on a
// window around the failing step; every step number the report gives is
// the fixture's. Each verdict stays what it is on the short incident:
// the correct fix fixed (graded from the file, its events never loaded),
// the narrow fix variant_failed, a fix that breaks a STRLEN long before
// the window diverged there. The failing step's dependency slice is too
// long here (the script may have read every key written before it): the
// variants fall back to the window, and say why.
func TestLongRecording(t *testing.T) {
	t.Parallel()
	b := getBuilds(t)
	const prefix, window = 600, 40
	const strlenAt = 101
	fx := longIncident(t, b.old, prefix, strlenAt)
	F := fx.Failure.Step
	c := redis.Integration{}
	run := func(fx *fixtures.Recording, new string, min int) *grade.Report {
		t.Helper()
		rep, err := grade.Run(context.Background(), fx, kavach.Launch{Path: b.old}, kavach.Launch{Path: new},
			grade.Options{Integration: c, MinVariants: min, Variants: 32, Seed: 1,
				LongSteps: 100, Window: window})
		if err != nil {
			t.Fatal(err)
		}
		gradetest.ReadBack(t, rep)
		return rep
	}
	first := F - window
	for _, tc := range []struct {
		name, new string
		file      bool
		min       int
		want      string
	}{
		{"correct fix, from the file", b.pristine, true, 10, "fixed"},
		{"narrow fix", b.narrow, false, 10, "variant_failed("},
		{"breaks STRLEN before the window", b.strlen, false, 0, fmt.Sprintf("diverged@%d", strlenAt)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := fixtures.NewRecording(fx, c)
			if tc.file {
				in = writeFixture(t, fx)
			}
			rep := run(in, tc.new, tc.min)
			if !strings.HasPrefix(rep.Verdict, tc.want) {
				t.Fatalf("verdict %s, want %s; findings %+v", rep.Verdict, tc.want, rep.Findings)
			}
			ev := rep.Evidence
			if want := fmt.Sprintf("steps %d to %d", first, F); ev.Variants.Window != want {
				t.Errorf("variants window %q, want %q", ev.Variants.Window, want)
			}
			if ev.Variants.Slice != nil || !strings.Contains(ev.Variants.SliceFallback, "more than 200 steps") {
				t.Errorf("slice %v, fallback %q: want the window, the slice being too long", ev.Variants.Slice, ev.Variants.SliceFallback)
			}
			if rep.Fixture.Steps != F {
				t.Errorf("report says %d steps, the fixture has %d", rep.Fixture.Steps, F)
			}
			// Every step before the window is counted: omitted (equal) or
			// listed (the STRLEN that differs, on the strlen build).
			listedBefore := 0
			for _, s := range ev.New.Steps {
				if s.Step < first {
					listedBefore++
				}
			}
			if ev.Omitted+listedBefore != first-1 || ev.Omitted < first-3 {
				t.Errorf("%d steps omitted and %d listed before step %d", ev.Omitted, listedBefore, first)
			}
			if ck := rep.Checked(); ck.StepsCompared != F-1 {
				t.Errorf("checked %d steps before the failure, want %d", ck.StepsCompared, F-1)
			}
			for _, v := range ev.Variants.List {
				for _, m := range stepNumber.FindAllStringSubmatch(v.Description, -1) {
					if n, _ := strconv.Atoi(m[1]); n < first || n > F {
						t.Errorf("variant %d names step %d, outside the window: %s", v.K, n, v.Description)
					}
				}
				if v.FailedStep != 0 && v.FailedStep < first {
					t.Errorf("variant %d failed at step %d, before the window", v.K, v.FailedStep)
				}
			}
			if tc.want == "fixed" && ev.Variants.Reproducing < 10 {
				t.Errorf("%d variants reproduce", ev.Variants.Reproducing)
			}
		})
	}
}

// A long fixture given with its summary is not summarized again, and the
// four replays of its diff share one plan of it (one more only when a
// replay must run again without batches): before, each made its own,
// each a full read of the file.
func TestOnePlanOneSummary(t *testing.T) {
	// Not parallel: it counts plans and summaries in process-wide counters.
	b := getBuilds(t)
	fx := writeFixture(t, longIncident(t, b.old, 600, 101)) // summarized
	c := redis.Integration{}
	summaries := fixtures.Summaries()
	plans, _ := replay.Counts()
	rep, err := grade.Run(context.Background(), fx, kavach.Launch{Path: b.old}, kavach.Launch{Path: b.pristine},
		grade.Options{Integration: c, Variants: 0, Seed: 1, LongSteps: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Verdict, "unverified") && !strings.HasPrefix(rep.Verdict, "fixed") {
		t.Errorf("verdict %s", rep.Verdict)
	}
	if got := fixtures.Summaries() - summaries; got != 0 {
		t.Errorf("the fixture was summarized %d more times, its summary given", got)
	}
	if got, _ := replay.Counts(); got-plans > 2 || got-plans < 1 {
		t.Errorf("the four replays made %d plans, want 1 (2 when one ran again without batches)", got-plans)
	}
}
