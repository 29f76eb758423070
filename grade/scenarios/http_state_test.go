package scenarios_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/internal/axumbuild"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/record"
)

// stateItems is the axum service's state file (--state DIR: DIR/items.json)
// as a service that has run for a while holds it: three items, the last id
// given 3. The incident's item 1 is there and nowhere else.
const stateItems = `{"last_id":3,"items":[` +
	`{"id":1,"name":"lamp","price_cents":1999,"quantity":1,"unit_price_cents":1999},` +
	`{"id":2,"name":"desk","price_cents":12000,"quantity":2,"unit_price_cents":6000},` +
	`{"id":3,"name":"chair","price_cents":4500,"quantity":3,"unit_price_cents":1500}]}`

// splitFromState is the HTTP incident on a service started from its state
// directory: item 1 read (it exists only in the state file), item 3
// deleted (the service writes its state file back), the list read, then
// item 1's price split in 2 and in 0 parts. Parts 0 divides by zero on the
// old build: the handler panics and the connection closes unanswered
// (step 5, a crash). No item is created: on an empty build the new item
// would be item 1, and the incident would recur without the state.
var splitFromState = []incidents.HTTPRequest{
	{Conn: 1, Method: "GET", Path: "/api/v1/items/1"},
	{Conn: 2, Method: "DELETE", Path: "/api/v1/items/3"},
	{Conn: 2, Method: "GET", Path: "/api/v1/items"},
	{Conn: 1, Method: "POST", Path: "/api/v1/items/1/split", Body: `{"parts":2}`},
	{Conn: 1, Method: "POST", Path: "/api/v1/items/1/split", Body: `{"parts":0}`},
}

// TestHTTPStateDir: the axum service keeps its items in a file of its
// state directory. An incident recorded with --state-dir (the recording's
// build given a copy) carries the directory's files; kavach replay starts
// each build from a fresh copy and reproduces; the correct fix is fixed and
// the narrow fix variant_failed, as TestHTTPVerdicts grades the incident
// recorded from an empty service. Planted faults: the fixture with its
// state removed cannot start the build it names {state} for, and with an
// empty state directory in its place it does not reproduce.
func TestHTTPStateDir(t *testing.T) {
	t.Parallel()
	old := axumbuild.MustBuild(t, axumbuild.MustPatch(t, "split-panics.patch"))
	narrow := axumbuild.MustBuild(t, axumbuild.MustPatch(t, "split-panics.patch"), axumbuild.MustPatch(t, "split-narrow.patch"))
	correct := axumbuild.MustBuild(t)

	stateDir := t.TempDir()
	itemsFile := filepath.Join(stateDir, "items.json")
	if err := os.WriteFile(itemsFile, []byte(stateItems), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "state.kavach")
	replies := recordWithStateDir(t, out, old, stateDir, splitFromState)
	if !bytes.Contains(replies[0], []byte(" 200 ")) || !bytes.Contains(replies[0], []byte(`"lamp"`)) {
		t.Fatalf("GET /api/v1/items/1 answered %q: want the lamp of the state file", replies[0])
	}
	if !bytes.Contains(replies[1], []byte(" 204 ")) {
		t.Fatalf("DELETE /api/v1/items/3 answered %q: want 204, item 3 of the state file deleted", replies[1])
	}
	// The recorded build wrote its copy, never the operator's directory.
	if b, err := os.ReadFile(itemsFile); err != nil || string(b) != stateItems {
		t.Fatalf("the state directory was written by the recording: %q, %v", b, err)
	}

	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Failure == nil || fx.Failure.Step != 5 || fx.Failure.Signature != "crash" {
		t.Fatalf("recorded failure %+v, want a crash at step 5", fx.Failure)
	}
	st := fx.State
	if st == nil || st.Mode != fixtures.StateDir || st.Format != fixtures.StateFormatTar || st.Files != 1 || st.Keys != 0 || st.Bytes != fx.StateDataBytes || fx.Header.State != fixtures.StateDir {
		t.Fatalf("state %+v (header %q, %d bytes of records): want a state directory of one file", st, fx.Header.State, fx.StateDataBytes)
	}
	if l := fx.Header.Launch; l == nil || strings.Join(l.Args, " ") != "--port {port} --state {state}" {
		t.Fatalf("launch %+v: want the arguments with {state} unexpanded", l)
	}
	if line := grading.StateLine(st); !strings.HasPrefix(line, "dir, 1 file, ") || !strings.HasSuffix(line, " bytes") {
		t.Errorf("state line %q: want dir, 1 file, N bytes", line)
	}

	// kavach replay: the old build, from a fresh copy of the state each
	// run, reproduces the incident.
	if ok, why := replayFixture(t, out, old); !ok {
		t.Fatalf("kavach replay of the old build: not reproduced (%s)", why)
	}

	// Planted: the state removed from the fixture. Its build names
	// {state}, which no state directory gives: refused before it starts.
	bare := filepath.Join(t.TempDir(), "bare.kavach")
	rewriteState(t, out, bare, nil)
	_, err = grading.Replay(context.Background(), replayRequest(bare, old))
	if err == nil || !strings.Contains(err.Error(), "{state}") {
		t.Fatalf("replay of the fixture without its state: %v, want the build refused for {state}", err)
	}
	// Planted: an empty state directory in its place. The build starts
	// empty, item 1 is not there, and the incident does not reproduce.
	var empty bytes.Buffer
	if _, err := fixtures.TarDir(t.TempDir(), &empty); err != nil {
		t.Fatal(err)
	}
	emptied := filepath.Join(t.TempDir(), "emptied.kavach")
	rewriteState(t, out, emptied, empty.Bytes())
	if ok, table := replayFixture(t, emptied, old); ok {
		t.Fatalf("replayed from an empty state directory, the incident still reproduces: the test proves nothing\n%s", table)
	}

	c := axum.Integration{}
	oldLaunch := kavach.Launch{Path: old, Args: fx.Header.Launch.Args}
	for _, tc := range []struct {
		name, build, want, why string
	}{
		{"correct", correct, "fixed", "parts 0 answers 422"},
		{"narrow", narrow, "variant_failed(", "planted fault: only item 1 is handled; variants over the path segment still crash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), oldLaunch,
				kavach.Launch{Path: tc.build, Args: fx.Header.Launch.Args},
				grade.Options{Integration: c, Variants: 64, MinVariants: 10, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != tc.want && !(strings.HasSuffix(tc.want, "(") && strings.HasPrefix(rep.Verdict, tc.want)) {
				found, _ := json.MarshalIndent(rep.Findings, "", "  ")
				t.Fatalf("%s (%s): %s; findings %s\nvariants: %+v", tc.name, tc.why, rep.Verdict, found, rep.Evidence.Variants)
			}
			if parts, _ := grade.Derive(rep.Evidence); parts.String() != rep.Verdict {
				t.Errorf("evidence gives %s", parts)
			}
			if tc.want == "fixed" && rep.Evidence.Variants.Reproducing < 10 {
				t.Errorf("%d variants reproduce, want ≥10", rep.Evidence.Variants.Reproducing)
			}
		})
	}
}

// recordWithStateDir records session into out, through a proxy in front
// of build, which the session starts with the state directory dir
// (--port {port} --state {state}), and returns each request's response
// (nil for the last, whose connection must close unanswered).
func recordWithStateDir(t *testing.T, out, build, dir string, session []incidents.HTTPRequest) [][]byte {
	t.Helper()
	s := record.Session{Out: out, StateDir: dir,
		Launch: &kavach.Launch{Path: build, Args: []string{"--port", "{port}", "--state", "{state}"}}}
	grading.SetupRecording(&s, axum.Protocol, nil, false, 10*time.Second)
	rec, err := s.Go(context.Background(), axum.Protocol)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	conns := map[int]net.Conn{}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var replies [][]byte
	for i, r := range session {
		c := conns[r.Conn]
		if c == nil {
			if c, err = net.Dial("tcp", rec.Addr); err != nil {
				t.Fatal(err)
			}
			conns[r.Conn] = c
		}
		reply, err := incidents.SendHTTP(c, r)
		last := i == len(session)-1
		switch {
		case err != nil && !last:
			t.Fatalf("request %d (%s %s): %v", i+1, r.Method, r.Path, err)
		case err == nil && last:
			t.Fatalf("the old build answered the incident's last request (%s %s): the planted bug is not there", r.Method, r.Path)
		}
		replies = append(replies, reply)
	}
	time.Sleep(300 * time.Millisecond) // the proxy sees the close
	res, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.State == nil || res.State.Mode != fixtures.StateDir {
		t.Fatalf("the recording's result says state %+v, want the state directory", res.State)
	}
	return replies
}

func replayRequest(fixture, build string) grading.ReplayRequest {
	return grading.ReplayRequest{Build: build, Fixture: fixture, Runs: 3, StepTimeout: 5 * time.Second, StartTimeout: 10 * time.Second}
}

// replayFixture replays the fixture on build as kavach replay does (three
// runs, the last perturbed) and says whether it reproduced, and where not.
func replayFixture(t *testing.T, fixture, build string) (bool, string) {
	t.Helper()
	res, err := grading.Replay(context.Background(), replayRequest(fixture, build))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	var table bytes.Buffer
	res.Print(&table)
	return res.Reproduced(), table.String()
}

// rewriteState copies the fixture in to out with its state replaced: by
// the state directory whose tar stream is stream, or (nil) by none at all,
// the header's mode included.
func rewriteState(t *testing.T, in, out string, stream []byte) {
	t.Helper()
	r, err := fixtures.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := r.Header()
	if stream == nil {
		h.State = ""
	}
	w, err := fixtures.Create(out, h)
	if err != nil {
		t.Fatal(err)
	}
	if stream != nil {
		if err := w.WriteState(&fixtures.State{Mode: fixtures.StateDir, Format: fixtures.StateFormatTar}, bytes.NewReader(stream), nil); err != nil {
			t.Fatal(err)
		}
	}
	var end fixtures.End
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch rec.Kind {
		case fixtures.KindState, fixtures.KindStateData, fixtures.KindStateKey:
			continue
		case fixtures.KindEnd:
			end = *rec.End
			continue
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(end); err != nil {
		t.Fatal(err)
	}
}
