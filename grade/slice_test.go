package grade_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/gradetest"
)

// sliceIncident is a 10,000-step recording, streamed from its file as a
// long one is, whose last step is the GETRANGE incident's failing request
// on a key written 5,000 steps before it, far outside the variants'
// window: on one connection, SELECT 2 and SET tmp at steps 1 and 2; COPY
// tmp greeting and APPEND greeting at steps 5,000 and 5,001; STRLEN, a
// working GETRANGE and the crashing one at steps 9,998 to 10,000. Every other step is another
// connection's SETs and GETs of keys of their own, in database 0.
func sliceIncident(t *testing.T, header fixtures.Header) *fixtures.Fixture {
	t.Helper()
	const steps, copyAt = 10_000, 5_000
	const filler, incident = 1 << 20, 2 << 20
	var evs []kavach.Event
	var off time.Duration
	add := func(conn uint64, dir kavach.Direction, data string) {
		off += 20 * time.Microsecond
		evs = append(evs, kavach.Event{Seq: uint64(len(evs) + 1), Conn: conn, Dir: dir, Offset: off, Data: []byte(data)})
	}
	cmd := func(a ...string) string {
		b := make([][]byte, len(a))
		for i := range a {
			b[i] = []byte(a[i])
		}
		return string(redis.AppendCommand(nil, b...))
	}
	n := 0 // steps made
	step := func(conn uint64, reply string, a ...string) {
		n++
		add(conn, kavach.Request, cmd(a...))
		add(conn, kavach.Response, reply)
	}
	j := 0
	fill := func(until int) { // the filler's steps up to step until
		for n < until {
			key := "key:" + strconv.Itoa(j/2)
			if j%2 == 0 {
				step(filler, "+OK\r\n", "SET", key, "value-"+strconv.Itoa(j))
			} else {
				v := "value-" + strconv.Itoa(j-1)
				step(filler, fmt.Sprintf("$%d\r\n%s\r\n", len(v), v), "GET", key)
			}
			j++
		}
	}
	add(incident, kavach.Open, "")
	step(incident, "+OK\r\n", "SELECT", "2")
	step(incident, "+OK\r\n", "SET", "tmp", "hello world")
	add(filler, kavach.Open, "")
	fill(copyAt - 1)
	step(incident, ":1\r\n", "COPY", "tmp", "greeting")
	step(incident, ":12\r\n", "APPEND", "greeting", "!")
	fill(steps - 3)
	add(filler, kavach.Close, "client")
	step(incident, ":12\r\n", "STRLEN", "greeting")
	step(incident, "$5\r\nhello\r\n", "GETRANGE", "greeting", "0", "4")
	add(incident, kavach.Request, cmd("GETRANGE", "greeting", "-100", "-1"))
	n++
	add(incident, kavach.Close, "server")
	if got := len(kavach.Steps(evs, redis.Integration{})); got != steps || n != steps {
		t.Fatalf("made %d steps, want %d", got, steps)
	}
	f := kavach.Failure{Step: steps, Oracle: kavach.Oracle{Kind: kavach.Crash}, Signature: "crash", Evidence: "exit status 134"}
	return &fixtures.Fixture{Path: "slice.kavach", Header: header, Events: evs, Failure: &f}
}

// The variants of a long recording replay the failing request's
// dependency slice, not a window by position: the failing GETRANGE
// needs greeting, which COPY wrote 5,000 steps before from tmp (written
// at step 2), in the database SELECT chose. The slice holds those five
// steps (the filler's 9,993 writes of other keys and the incident's own
// reads are not in it); the old build crashes on it, so it is used; ten
// and more variants reproduce, every step they name is one of the
// slice's fixture numbers; the correct fix is fixed, the narrow fix
// fails a variant. On the window (steps 9,000 to 10,000) greeting would
// be missing, GETRANGE would not crash, and no variant would reproduce.
func TestVariantsOnTheSlice(t *testing.T) {
	t.Parallel()
	b := getBuilds(t)
	fx := sliceIncident(t, recordIncident(t, b.old).Header)
	in := writeFixture(t, fx) // graded from the file, as kavach diff grades it
	c := redis.Integration{}
	slice := []int{1, 2, 5_000, 5_001, 10_000}
	for _, tc := range []struct {
		name, new, want string
	}{
		{"correct fix", b.pristine, "fixed"},
		{"narrow fix", b.narrow, "variant_failed("},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := grade.Run(context.Background(), in, kavach.Launch{Path: b.old}, kavach.Launch{Path: tc.new},
				grade.Options{Integration: c, MinVariants: 10, Variants: 32, Seed: 1, Memo: gradetest.OldReplays, OldRuns: 1})
			if err != nil {
				t.Fatal(err)
			}
			gradetest.ReadBack(t, rep)
			ve := rep.Evidence.Variants
			if !strings.HasPrefix(rep.Verdict, tc.want) {
				t.Fatalf("verdict %s, want %s; slice %v, fallback %q, findings %+v", rep.Verdict, tc.want, ve.Slice, ve.SliceFallback, rep.Findings)
			}
			sl := ve.Slice
			if sl == nil || ve.Window != "" || ve.SliceFallback != "" {
				t.Fatalf("slice %v, window %q, fallback %q: want the slice", sl, ve.Window, ve.SliceFallback)
			}
			if sl.Steps != len(slice) || sl.First != 1 || !slices.Equal(sl.Keys, []string{"greeting", "tmp"}) || sl.State != 1 || sl.Unknown != 0 {
				t.Errorf("slice %+v, want the 5 steps %v following greeting and tmp, one of them SELECT", sl, slice)
			}
			if ve.Reproducing < 10 {
				t.Errorf("%d variants reproduce on the slice, want 10 or more", ve.Reproducing)
			}
			for _, v := range ve.List {
				for _, m := range stepNumber.FindAllStringSubmatch(v.Description, -1) {
					if n, _ := strconv.Atoi(m[1]); !slices.Contains(slice, n) {
						t.Errorf("variant %d names step %d, not one of the slice's %v: %s", v.K, n, slice, v.Description)
					}
				}
				for _, n := range []int{v.OldStep, v.FailedStep} {
					if n != 0 && !slices.Contains(slice, n) {
						t.Errorf("variant %d: step %d is not one of the slice's %v", v.K, n, slice)
					}
				}
			}
		})
	}
}
