package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/record"
)

// TestKeepCutsTheGetrangeIncident: kavach record --keep 2s in front of the
// GETRANGE build with its planted crash, while one client connection sends
// requests for about four seconds and then the incident's session, whose
// last request kills the build. The recording ends with one cut in the
// --out directory and nothing else there; the cut holds the last stretch
// (not the first requests, which are older than --keep), the incident's
// steps and the crash marked at its last step. kavach replay of the cut on
// the old build reproduces; kavach diff grades the correct fix fixed and
// the narrow fix red.
func TestKeepCutsTheGetrangeIncident(t *testing.T) {
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOld)...)
	fixed := redisbuild.MustBuild(t)
	narrow := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeNarrow)...)
	bin, err := exec.LookPath("kavach")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cuts, ready := filepath.Join(dir, "cuts"), filepath.Join(dir, "addr")
	rec := exec.Command(bin, "record", "--protocol", "resp", "--out", cuts, "--keep", "2s", "--keep-after", "300ms", "--ready-file", ready, "--", old)
	var stderr bytes.Buffer
	rec.Stderr = &stderr
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rec.Wait() }()
	t.Cleanup(func() { rec.Process.Kill() })
	conn := dialReady(t, ready)
	defer conn.Close()
	br := bufio.NewReader(conn)
	send := func(args ...string) {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		conn.Write(redis.AppendCommand(nil, b...))
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, _ := br.ReadString('\n')
		if strings.HasPrefix(line, "$") && line != "$-1\r\n" {
			br.ReadString('\n')
		}
	}
	send("SET", "first", "request") // older than --keep when the build dies
	start := time.Now()
	for i := 0; time.Since(start) < 4*time.Second; i++ {
		send("SET", fmt.Sprintf("key:%d", i), "value")
		time.Sleep(5 * time.Millisecond)
	}
	for _, cmd := range incidents.Getrange {
		send(cmd...)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the recording did not end with the build; stderr:\n%s", stderr.String())
	}
	ents, err := os.ReadDir(cuts)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || !strings.HasSuffix(ents[0].Name(), fixtures.Ext) {
		t.Fatalf("the cuts directory holds %v, want one cut; stderr:\n%s", ents, stderr.String())
	}
	cut := filepath.Join(cuts, ents[0].Name())
	if !strings.Contains(stderr.String(), "kavach: cut "+cut) {
		t.Errorf("stderr does not name the cut:\n%s", stderr.String())
	}
	fx, err := fixtures.Load(cut)
	if err != nil {
		t.Fatal(err)
	}
	codec := redis.Integration{}
	steps := kavach.Steps(fx.Events, codec)
	first := codec.DescribeRequest(steps[0].Request.Data, 0)
	if strings.Contains(first, "first") || !strings.Contains(first, "key:") {
		t.Errorf("the cut starts with %s, want a request of the last stretch", first)
	}
	if f := fx.Failure; f == nil || f.Step != len(steps) || f.Oracle.Kind != kavach.Crash {
		t.Fatalf("cut's failure %+v, want a crash at its last step %d", fx.Failure, len(steps))
	}
	if last := codec.DescribeRequest(steps[len(steps)-1].Request.Data, 0); !strings.Contains(last, "-100") {
		t.Fatalf("the cut's last step is %s, want the incident's GETRANGE", last)
	}
	out, err := exec.Command(bin, "replay", old, cut).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("reproduced")) {
		t.Fatalf("kavach replay of the cut: %v\n%s", err, out)
	}
	verdict := func(build string) (string, int) {
		cmd := exec.Command(bin, "diff", old, build, cut, "-j", "1", "--out", filepath.Join(dir, "report.json"))
		out, err := cmd.CombinedOutput()
		code := 0
		if err != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return string(out), code
	}
	if out, code := verdict(fixed); code != exitFixed || !strings.Contains(out, "fixed") {
		t.Errorf("kavach diff of the correct fix on the cut: exit %d\n%s", code, out)
	}
	if out, code := verdict(narrow); code != exitRed {
		t.Errorf("kavach diff of the narrow fix on the cut: exit %d, want %d\n%s", code, exitRed, out)
	}
}

// dialReady waits for the ready file and dials the address in it.
func dialReady(t *testing.T, ready string) net.Conn {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(ready)
		if err != nil {
			continue
		}
		c, err := net.Dial("tcp", strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Fatal("no ready file after 60 s")
	return nil
}

// TestKill9DuringACut: kill -9 of kavach record --keep while it writes a
// cut of a large stretch (about 48 MB, which does not compress) leaves
// the earlier cut whole and no half-written file under a cut's name: every
// file named *.kavach reads back whole, with its end record.
func TestKill9DuringACut(t *testing.T) {
	bin, err := exec.LookPath("kavach")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cuts, ready := filepath.Join(dir, "cuts"), filepath.Join(dir, "addr")
	rec := exec.Command(bin, "record", "--protocol", "resp", "--out", cuts, "--keep", "10m", "--ready-file", ready, "--", "redis-server")
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Process.Kill(); rec.Wait() })
	conn := dialReady(t, ready)
	defer conn.Close()
	br := bufio.NewReader(conn)
	value := make([]byte, 1<<20)
	for i := range 48 {
		for j := range value {
			value[j] = byte(j*7919 + i*104729 + j>>8*31)
		}
		conn.Write(redis.AppendCommand(nil, []byte("SET"), []byte(fmt.Sprintf("big:%d", i)), value))
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		if line, err := br.ReadString('\n'); err != nil || line != "+OK\r\n" {
			t.Fatalf("SET big:%d: %q %v", i, line, err)
		}
	}
	out, err := exec.Command(bin, "record", "--cut", cuts).CombinedOutput()
	if err != nil {
		t.Fatalf("kavach record --cut: %v\n%s", err, out)
	}
	first := strings.TrimSpace(string(out))
	before, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	rec.Process.Signal(syscall.SIGUSR1)
	caught := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !caught; {
		ents, _ := os.ReadDir(cuts)
		for _, e := range ents {
			caught = caught || strings.HasSuffix(e.Name(), ".tmp")
		}
		if len(record.CutNames(cuts)) > 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	rec.Process.Kill()
	rec.Wait()
	t.Logf("killed while a cut was being written: %v", caught)
	after, err := os.ReadFile(first)
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the earlier cut changed after kill -9: %v", err)
	}
	for name := range record.CutNames(cuts) {
		fx, err := fixtures.Load(filepath.Join(cuts, name))
		if err != nil {
			t.Errorf("%s after kill -9: %v: a half-written cut under a final name", name, err)
		} else if fx.Warning != nil || fx.End == nil {
			t.Errorf("%s after kill -9: warning %v, end %v: a half-written cut under a final name", name, fx.Warning, fx.End)
		}
	}
}
