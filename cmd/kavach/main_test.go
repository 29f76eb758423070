package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/axumbuild"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/launch"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestMain(m *testing.M) {
	cmds := map[string]func(){
		"kavach":    kavachMain,
		"mkfixture": mkfixtureMain,
	}
	for name, f := range scriptCommands {
		cmds[name] = f
	}
	testscript.Main(m, cmds)
}

// kavachMain is the kavach command in scripts: main itself, signals included.
func kavachMain() { main() }

func TestScripts(t *testing.T) {
	// Replays need Redis built from source (MALLOC=libc): the packaged
	// server deadlocks under libfaketime. Cached after the first build.
	builds := map[string]string{
		"REDIS_BUILD":          redisbuild.MustBuild(t),
		"REDIS_PING_PATCHED":   redisbuild.MustBuild(t, filepath.Join(incidents.Patches(), "ping-patched.patch")),
		"REDIS_OLD":            redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOld)...),
		"REDIS_NARROW":         redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeNarrow)...),
		"REDIS_STRLEN":         redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenBroken)...),
		"REDIS_OFFBYONE":       redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOffByOne)...),
		"REDIS_STRLEN_OLD":     redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenOld)...),
		"REDIS_STRLEN_SHORT":   redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenShortWrong)...),
		"REDIS_BLOCK_LATE":     redisbuild.MustBuild(t, incidents.PatchPaths([]string{"block-timeout-late.patch"})...),
		"REDIS_INCRBY_NEG":     redisbuild.MustBuild(t, incidents.PatchPaths(incidents.IncrbyOld)...),
		"REDIS_VALUES_OLD":     redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ValuesOld)...),
		"REDIS_VALUES_NARROW":  redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ValuesNarrow)...),
		"REDIS_SCRIPTS_OLD":    redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ScriptsOld)...),
		"REDIS_SCRIPTS_NARROW": redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ScriptsNarrow)...),
		"REDIS_SCRIPTS_FCALL":  redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ScriptsFcallOnly)...),
		"REDIS_SAFE_OLD":       redisbuild.MustBuild(t, incidents.PatchPaths(incidents.SafeIntegerOld)...),
		"REDIS_SAFE_EXPIRE":    redisbuild.MustBuild(t, incidents.PatchPaths(incidents.SafeIntegerExpireOnly)...),
		// The axum service with its planted split bug (record_state_dir).
		"AXUM_SPLIT_OLD": axumbuild.MustBuild(t, axumbuild.MustPatch(t, "split-panics.patch")),
	}
	// The GETRANGE incident, recorded once on the old build; each script
	// gets a copy as getrange.kavach.
	getrange := filepath.Join(t.TempDir(), "getrange.kavach")
	if err := incidents.RecordGetrange(getrange, builds["REDIS_OLD"]); err != nil {
		t.Fatal(err)
	}
	fixture, err := os.ReadFile(getrange)
	if err != nil {
		t.Fatal(err)
	}
	// The STRLEN incident (a wrong answer), recorded but not marked: the
	// scripts mark it, with its invariants file beside it.
	strlenPath := filepath.Join(t.TempDir(), "strlen.kavach")
	if err := incidents.RecordSession(strlenPath, builds["REDIS_STRLEN_OLD"], incidents.Strlen); err != nil {
		t.Fatal(err)
	}
	strlenFixture, err := os.ReadFile(strlenPath)
	if err != nil {
		t.Fatal(err)
	}
	// A contract: the GETRANGE session recorded on the pristine build,
	// which answers every step (no failure).
	contractPath := filepath.Join(t.TempDir(), "contract.kavach")
	if err := incidents.RecordSession(contractPath, builds["REDIS_BUILD"], incidents.Getrange); err != nil {
		t.Fatal(err)
	}
	contractFixture, err := os.ReadFile(contractPath)
	if err != nil {
		t.Fatal(err)
	}
	// A contract around the GETRANGE incident, recorded on its old build:
	// a counter moved up and down with INCRBY.
	counterPath := filepath.Join(t.TempDir(), "counter.kavach")
	if err := incidents.RecordSession(counterPath, builds["REDIS_OLD"], counterSession); err != nil {
		t.Fatal(err)
	}
	counterFixture, err := os.ReadFile(counterPath)
	if err != nil {
		t.Fatal(err)
	}
	// The INCRBYFLOAT incident (a negative increment refused), recorded
	// and marked on its old build.
	incrbyFloatPath := filepath.Join(t.TempDir(), "incrbyfloat.kavach")
	if err := incidents.RecordIncrbyFloat(incrbyFloatPath, builds["REDIS_VALUES_OLD"]); err != nil {
		t.Fatal(err)
	}
	incrbyFloatFixture, err := os.ReadFile(incrbyFloatPath)
	if err != nil {
		t.Fatal(err)
	}
	// The HINCRBY script incident, typed into redis-cli on its old
	// build, and a script Kavach cannot read (its command is an ARGV).
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli (the stock client, Debian's redis-tools) is needed: %v", err)
	}
	scriptPath := filepath.Join(t.TempDir(), "scripthincrby.kavach")
	if err := incidents.RecordScriptHincrby(scriptPath, builds["REDIS_SCRIPTS_OLD"], cli); err != nil {
		t.Fatal(err)
	}
	scriptFixture, err := os.ReadFile(scriptPath)
	if err != nil {
		t.Fatal(err)
	}
	// The same script loaded by SCRIPT LOAD and run by EVALSHA, and a
	// function loaded by FUNCTION LOAD and called by FCALL with an empty
	// ARGV: their scripts are in the steps before the failing one.
	evalshaPath := filepath.Join(t.TempDir(), "scriptevalsha.kavach")
	if err := incidents.RecordScriptEvalsha(evalshaPath, builds["REDIS_SCRIPTS_OLD"], cli); err != nil {
		t.Fatal(err)
	}
	evalshaFixture, err := os.ReadFile(evalshaPath)
	if err != nil {
		t.Fatal(err)
	}
	fcallPath := filepath.Join(t.TempDir(), "scriptfcall.kavach")
	if err := incidents.RecordScriptFcall(fcallPath, builds["REDIS_SCRIPTS_OLD"], cli); err != nil {
		t.Fatal(err)
	}
	fcallFixture, err := os.ReadFile(fcallPath)
	if err != nil {
		t.Fatal(err)
	}
	dynamicPath := filepath.Join(t.TempDir(), "scriptdynamic.kavach")
	if err := incidents.RecordScriptDynamic(dynamicPath, builds["REDIS_SCRIPTS_OLD"]); err != nil {
		t.Fatal(err)
	}
	dynamicFixture, err := os.ReadFile(dynamicPath)
	if err != nil {
		t.Fatal(err)
	}
	safePath := filepath.Join(t.TempDir(), "safeinteger.kavach")
	if err := incidents.RecordSafeInteger(safePath, builds["REDIS_SAFE_OLD"]); err != nil {
		t.Fatal(err)
	}
	safeFixture, err := os.ReadFile(safePath)
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		// [netns]: builds run in network namespaces of their own here.
		Condition: func(cond string) (bool, error) {
			if cond == "netns" {
				return launch.Isolation() == "netns", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			for k, v := range builds {
				env.Setenv(k, v)
			}
			env.Setenv("VERIFIER", verifierScript(t))
			env.Setenv("HARBOR_TEST", harborTestScript(t))
			hidden, err := filepath.Abs(filepath.Join("..", "..", "examples", "harbor-task", "tests", "hidden_test.sh"))
			if err != nil {
				return err
			}
			env.Setenv("HARBOR_HIDDEN_TEST", hidden)
			for name, data := range map[string][]byte{
				"getrange.kavach":      fixture,
				"strlen.kavach":        strlenFixture,
				"contract.kavach":      contractFixture,
				"counter.kavach":       counterFixture,
				"incrbyfloat.kavach":   incrbyFloatFixture,
				"scripthincrby.kavach": scriptFixture,
				"scriptdynamic.kavach": dynamicFixture,
				"scriptevalsha.kavach": evalshaFixture,
				"scriptfcall.kavach":   fcallFixture,
				"safeinteger.kavach":   safeFixture,
				"strlen.invariants":    []byte(incidents.StrlenInvariants),
			} {
				if err := os.WriteFile(filepath.Join(env.WorkDir, name), data, 0o644); err != nil {
					return err
				}
			}
			return nil
		},
	})
}

// counterSession is the counter contract's traffic.
var counterSession = [][]string{
	{"SET", "counter", "10"},
	{"INCRBY", "counter", "-3"},
	{"GET", "counter"},
	{"INCRBY", "counter", "5"},
}

// mkfixtureMain is a script command: mkfixture OUT [cut N | noend | protocol P | bigreply N].
// It writes the sample fixture; "cut N" keeps only the first N bytes
// (negative: drop -N bytes from the end), "noend" leaves out the end record,
// "bigreply N" answers step 1 (PING) with a bulk string of N bytes.
func mkfixtureMain() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mkfixture OUT [cut N | noend | protocol P | failstep N]")
		os.Exit(2)
	}
	out, opts := os.Args[1], os.Args[2:]
	protocol, cut, end, big := "resp", 0, true, 0
	for i := 0; i < len(opts); i++ {
		switch opts[i] {
		case "bigreply":
			i++
			big, _ = strconv.Atoi(opts[i])
		case "noend":
			end = false
		case "cut":
			i++
			cut, _ = strconv.Atoi(opts[i])
		case "protocol":
			i++
			protocol = opts[i]
		case "failstep":
			i++
			sampleFailStep, _ = strconv.Atoi(opts[i])
		}
	}
	data, err := sampleFixture(protocol, end, big)
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

// sampleFailStep is the step sampleFixture marks as failing (mkfixture's
// failstep N changes it, for a fixture whose mark is out of range).
var sampleFailStep = 6

// sampleFixture is a small incident on conn 1 and 2: a few commands, an
// error reply, a reply that arrives late on a blocking pop, and a crash.
func sampleFixture(protocol string, end bool, bigReply int) ([]byte, error) {
	return sampleFixtureFailing(protocol, end, bigReply, kavach.Failure{Step: sampleFailStep, Oracle: kavach.Oracle{Kind: kavach.Crash},
		Signature: "crash", Evidence: "connection closed by the server; killed by SIGSEGV"})
}

// sampleFixtureFailing is sampleFixture with the failure marked as given.
func sampleFixtureFailing(protocol string, end bool, bigReply int, failure kavach.Failure) ([]byte, error) {
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
	if bigReply > 0 {
		events[2].Data = fmt.Appendf(nil, "$%d\r\n%s\r\n", bigReply, strings.Repeat("x", bigReply))
	}
	for _, ev := range events {
		if _, err := w.Event(ev); err != nil {
			return nil, err
		}
	}
	if err := w.Failure(failure); err != nil {
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
	data, err := sampleFixture("resp", true, 0)
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

// scriptCommands are the helpers scripts use beside kavach itself.
var scriptCommands = map[string]func(){
	"waitfile": waitfileMain,
	"rcmd":     rcmdMain,
	"rcli":     rcliMain,
	"rclittl":  rclittlMain,
	"noprocs":  noprocsMain,
	"relaunch": relaunchMain,
	"service":  serviceMain,
	"withaddr": withaddrMain,

	"jsonfile": jsonfileMain,
	"status":   statusMain,
}

// relaunchMain: relaunch IN OUT ARG... — copy the fixture IN to OUT with
// its recorded launch arguments replaced by ARG... (a hostile fixture).
func relaunchMain() {
	if err := relaunch(os.Args[1], os.Args[2], os.Args[3:]); err != nil {
		fmt.Fprintln(os.Stderr, "relaunch:", err)
		os.Exit(1)
	}
}

func relaunch(in, out string, args []string) error {
	r, err := fixtures.Open(in)
	if err != nil {
		return err
	}
	defer r.Close()
	h := r.Header()
	l := kavach.Launch{Path: "/opt/redis/old/redis-server"}
	if h.Launch != nil {
		l = *h.Launch
	}
	l.Args = args
	h.Launch = &l
	w, err := fixtures.Create(out, h)
	if err != nil {
		return err
	}
	var end fixtures.End
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if rec.Kind == fixtures.KindEnd {
			end = *rec.End
			continue
		}
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	return w.Close(end)
}

// rcliMain: rcli ADDRFILE LINE... — pipe the lines into a stock redis-cli
// connected to the address in ADDRFILE: one connection, each command sent
// once the one before was answered; its output is printed.
func rcliMain() {
	addr, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	host, port, _ := strings.Cut(strings.TrimSpace(string(addr)), ":")
	cmd := exec.Command("redis-cli", "-h", host, "-p", port)
	cmd.Stdin = strings.NewReader(strings.Join(os.Args[2:], "\n") + "\n")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "redis-cli:", err)
		os.Exit(1)
	}
}

// rclittlMain: rclittl ADDRFILE KEY LINE... — pipe the lines into a stock
// redis-cli as rcli does, and the moment it prints OK (a write answered),
// read KEY's TTL on a second connection opened before it: the read follows
// the write by a millisecond or so, however loaded the machine (a sleep, or
// a new process after redis-cli exits, can come half a second late).
// Prints redis-cli's output, then the TTL as redis-cli would.
func rclittlMain() {
	addr, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hostport := strings.TrimSpace(string(addr))
	conn, err := net.Dial("tcp", hostport)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close()
	host, port, _ := strings.Cut(hostport, ":")
	cmd := exec.Command("redis-cli", "-h", host, "-p", port)
	cmd.Stdin = strings.NewReader(strings.Join(os.Args[3:], "\n") + "\n")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "redis-cli:", err)
		os.Exit(1)
	}
	sc := bufio.NewScanner(out)
	ttl := ""
	for sc.Scan() {
		fmt.Println(sc.Text())
		if sc.Text() == "OK" && ttl == "" {
			key := os.Args[2]
			fmt.Fprintf(conn, "*2\r\n$3\r\nTTL\r\n$%d\r\n%s\r\n", len(key), key)
			line, err := bufio.NewReader(conn).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, ":") {
				fmt.Fprintf(os.Stderr, "TTL %s: %q %v\n", key, line, err)
				os.Exit(1)
			}
			ttl = "(integer) " + strings.TrimSpace(line[1:])
		}
	}
	if err := cmd.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "redis-cli:", err)
		os.Exit(1)
	}
	if ttl == "" {
		fmt.Fprintln(os.Stderr, "redis-cli never printed OK")
		os.Exit(1)
	}
	fmt.Println(ttl)
}

// jsonfileMain: jsonfile FILE — fail unless FILE holds one JSON value.
func jsonfileMain() {
	b, err := os.ReadFile(os.Args[1])
	if err == nil && !json.Valid(b) {
		err = fmt.Errorf("%s is not JSON:\n%s", os.Args[1], b)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// serviceMain: service ADDRFILE [ARG...] — run Debian's redis-server as an
// operator runs a service (a free loopback port, persisting nothing, in
// the current directory), write its address to ADDRFILE once it answers,
// and stop it when killed (or when this process dies).
func serviceMain() {
	port, err := launch.FreePort()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command("redis-server", append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--logfile", "service.log"}, os.Args[2:]...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		cmd.Process.Kill()
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			fmt.Fprintln(os.Stderr, "service: redis-server not ready")
			os.Exit(1)
		}
	}
	os.WriteFile(os.Args[1]+".tmp", []byte(addr+"\n"), 0o644)
	os.Rename(os.Args[1]+".tmp", os.Args[1])
	cmd.Wait()
}

// withaddrMain: withaddr ADDRFILE CMD ARG... — run CMD with every ARG
// that is "ADDR" replaced by the address in ADDRFILE.
func withaddrMain() {
	addr, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	args := slices.Clone(os.Args[2:])
	for i, a := range args {
		if a == "ADDR" {
			args[i] = strings.TrimSpace(string(addr))
		}
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := syscall.Exec(path, args, os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// waitfileMain: waitfile FILE — wait up to 20 s for FILE to exist.
func waitfileMain() {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(os.Args[1]); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "waitfile: %s did not appear within 20s\n", os.Args[1])
	os.Exit(1)
}

// rcmdMain: rcmd ADDRFILE ARG... [; ARG...] — send Redis commands on a
// new connection to the address in ADDRFILE and print each reply as
// redis-cli would, or "(connection closed)".
func rcmdMain() {
	addr, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	conn, err := net.DialTimeout("tcp", strings.TrimSpace(string(addr)), 5*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	// A ";" argument separates commands sent one after another on the
	// one connection, each reply printed before the next is sent.
	var cmds [][][]byte
	var args [][]byte
	for _, a := range os.Args[2:] {
		if a == ";" {
			cmds, args = append(cmds, args), nil
			continue
		}
		args = append(args, []byte(a))
	}
	cmds = append(cmds, args)
	var buf []byte
	chunk := make([]byte, 4096)
	for _, c := range cmds {
		conn.Write(redis.AppendCommand(nil, c...))
		for {
			if m, _ := redis.Split(buf); m > 0 {
				v, _ := redis.Parse(buf[:m])
				fmt.Println(v.String())
				buf = buf[m:]
				break
			}
			n, err := conn.Read(chunk)
			buf = append(buf, chunk[:n]...)
			if err != nil && n == 0 {
				fmt.Println("(connection closed)")
				return
			}
		}
	}
}

// noprocsMain: noprocs DIR — fail if a process with DIR in its command
// line is still running 3 s from now (a killed process takes a moment to go).
func noprocsMain() {
	deadline := time.Now().Add(3 * time.Second)
	for {
		pid, cmdline := findProc(os.Args[1])
		if pid == "" {
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "noprocs: process %s is still running: %s\n", pid, cmdline)
			os.Exit(1)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// findProc returns a live process (not this one, not a zombie) whose
// command line contains s.
func findProc(s string) (pid string, cmdline []byte) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err != nil || n == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(s)) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 0 && f[0] == "Z" {
			continue
		}
		return e.Name(), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})
	}
	return "", nil
}

// TestHostileFixturesRefused: a fixture's hostile launch arguments are
// refused by replay, diff and variants, naming the argument, before any
// build starts (the build here leaves a mark when it runs).
func TestHostileFixturesRefused(t *testing.T) {
	dir := t.TempDir()
	data, err := sampleFixture("resp", true, 0)
	if err != nil {
		t.Fatal(err)
	}
	sample := filepath.Join(dir, "sample.kavach")
	if err := os.WriteFile(sample, data, 0o644); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(dir, "started")
	build := filepath.Join(dir, "build.sh")
	if err := os.WriteFile(build, []byte("#!/bin/sh\ntouch "+mark+"\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bind", "0.0.0.0", "--protected-mode", "no"}, "--bind 0.0.0.0 refused: a network setting"},
		{[]string{"--hz", "10", "--dir", "/etc", "--dbfilename", "x"}, "--dir /etc refused: a filesystem setting"},
		{[]string{"--dbfilename", "x.rdb"}, "--dbfilename x.rdb refused: a filesystem setting"},
		{[]string{"--loadmodule", "/tmp/m.so"}, "--loadmodule /tmp/m.so refused: a module setting"},
	} {
		fx := filepath.Join(dir, "hostile.kavach")
		os.Remove(fx)
		if err := relaunch(sample, fx, tc.args); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range [][]string{
			{"replay", build, fx},
			{"diff", build, build, fx},
			{"variants", "--build", build, fx},
		} {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"kavach"}, cmd...), nil, &stdout, &stderr)
			if code != exitCannot || !strings.Contains(stderr.String(), "fixture launch argument "+tc.want) {
				t.Errorf("kavach %s with %q: exit %d, %s; want exit 2 naming %q", cmd[0], tc.args, code, stderr.String(), tc.want)
			}
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("a build was started for a refused fixture")
	}
}

// statusMain is a script command: status N CMD ARG... runs CMD and passes
// when it exits with status N exactly (exec's "!" takes any non-zero).
// CMD's output goes to the script's stdout and stderr.
func statusMain() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: status N CMD ARG...")
		os.Exit(2)
	}
	want, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "status:", err)
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	got := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		got = exit.ExitCode()
	case err != nil:
		fmt.Fprintln(os.Stderr, "status:", err)
		os.Exit(2)
	}
	if got != want {
		fmt.Fprintf(os.Stderr, "status: %s exited %d, want %d\n", os.Args[2], got, want)
		os.Exit(1)
	}
}
