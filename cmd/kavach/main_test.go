package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"kavach": func() {
			os.Exit(run(context.Background(), os.Args, os.Stdin, os.Stdout, os.Stderr))
		},
		"mkfixture": mkfixtureMain,
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}

// mkfixtureMain is a script command: mkfixture OUT [cut N | noend | protocol P].
// It writes the sample fixture; "cut N" keeps only the first N bytes
// (negative: drop -N bytes from the end), "noend" leaves out the end record.
func mkfixtureMain() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mkfixture OUT [cut N | noend | protocol P]")
		os.Exit(2)
	}
	out, opts := os.Args[1], os.Args[2:]
	protocol, cut, end := "resp", 0, true
	for i := 0; i < len(opts); i++ {
		switch opts[i] {
		case "noend":
			end = false
		case "cut":
			i++
			cut, _ = strconv.Atoi(opts[i])
		case "protocol":
			i++
			protocol = opts[i]
		}
	}
	data, err := sampleFixture(protocol, end)
	if err == nil && cut != 0 {
		if cut < 0 {
			cut += len(data)
		}
		data = data[:cut]
	}
	if err == nil {
		err = os.WriteFile(out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// sampleFixture is a small incident on conn 1 and 2: a few commands, an
// error reply, a reply that arrives late on a blocking pop, and a crash.
func sampleFixture(protocol string, end bool) ([]byte, error) {
	var buf bytes.Buffer
	w, err := fixtures.NewWriter(&buf, "sample", fixtures.Header{
		Protocol: protocol,
		Build:    &fixtures.Build{Path: "/opt/redis/old/redis-server", SHA256: strings.Repeat("5e", 32), Version: "7.0.15"},
		Launch:   &kavach.Launch{Path: "/opt/redis/old/redis-server", Args: []string{"--port", "{port}", "--dir", "{dir}"}},
		Start:    time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC),
	})
	if err != nil {
		return nil, err
	}
	ms := time.Millisecond
	events := []kavach.Event{
		{Conn: 1, Dir: kavach.Open, Offset: 0},
		{Conn: 1, Dir: kavach.Request, Offset: 1 * ms, Data: []byte("*1\r\n$4\r\nPING\r\n")},
		{Conn: 1, Dir: kavach.Response, Offset: 2 * ms, Data: []byte("+PONG\r\n")},
		{Conn: 1, Dir: kavach.Request, Offset: 10 * ms, Data: []byte("*3\r\n$3\r\nSET\r\n$4\r\nuser\r\n$5\r\nalice\r\n")},
		{Conn: 1, Dir: kavach.Response, Offset: 11 * ms, Data: []byte("+OK\r\n")},
		{Conn: 2, Dir: kavach.Open, Offset: 20 * ms},
		{Conn: 2, Dir: kavach.Request, Offset: 21 * ms, Data: []byte("*3\r\n$5\r\nBLPOP\r\n$4\r\njobs\r\n$1\r\n0\r\n")},
		{Conn: 1, Dir: kavach.Request, Offset: 1500 * ms, Data: []byte("*3\r\n$5\r\nLPUSH\r\n$4\r\njobs\r\n$2\r\nj1\r\n")},
		{Conn: 1, Dir: kavach.Response, Offset: 1501 * ms, Data: []byte(":1\r\n")},
		{Conn: 2, Dir: kavach.Response, Offset: 1501 * ms, Data: []byte("*2\r\n$4\r\njobs\r\n$2\r\nj1\r\n")},
		{Conn: 1, Dir: kavach.Request, Offset: 2 * time.Second, Data: []byte("*2\r\n$4\r\nINCR\r\n$4\r\nuser\r\n")},
		{Conn: 1, Dir: kavach.Response, Offset: 2*time.Second + ms, Data: []byte("-ERR value is not an integer or out of range\r\n")},
		{Conn: 1, Dir: kavach.Request, Offset: 3 * time.Second, Data: []byte("*3\r\n$6\r\nSETBIT\r\n$4\r\nuser\r\n$2\r\n-1\r\n")},
		{Conn: 1, Dir: kavach.Close, Offset: 3*time.Second + 5*ms, Data: []byte("server")},
		{Conn: 2, Dir: kavach.Close, Offset: 3*time.Second + 5*ms, Data: []byte("server")},
	}
	for _, ev := range events {
		if _, err := w.Event(ev); err != nil {
			return nil, err
		}
	}
	if err := w.Failure(kavach.Failure{Step: 6, Oracle: kavach.Oracle{Kind: kavach.Crash}, Signature: "crash",
		Evidence: "connection closed by the server; killed by SIGSEGV"}); err != nil {
		return nil, err
	}
	w.Flush()
	if !end {
		// Leave the writer unclosed: the stream stops after the last flush.
		return bytes.Clone(buf.Bytes()), nil
	}
	if err := w.Close(fixtures.End{Duration: 3*time.Second + 5*ms, Reason: "server closed"}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TestShowGolden checks what a person sees of the sample fixture. Rows:
// the table (the default view), one step in full (a step whose reply came
// late on another connection's push), and the JSON Lines scripts read.
func TestShowGolden(t *testing.T) {
	dir := t.TempDir()
	data, err := sampleFixture("resp", true)
	if err != nil {
		t.Fatal(err)
	}
	fx := filepath.Join(dir, "sample.kavach")
	if err := os.WriteFile(fx, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"show.golden", []string{"show", fx}},
		{"show_step.golden", []string{"show", fx, "--step", "3"}},
		{"show_json.golden", []string{"show", "--json", fx}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), append([]string{"kavach"}, tc.args...), nil, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			got := strings.ReplaceAll(stdout.String(), dir, "$DIR")
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("kavach %s differs from %s (run with -update if the change is right):\ngot:\n%s\nwant:\n%s", strings.Join(tc.args, " "), path, got, want)
			}
		})
	}
}
