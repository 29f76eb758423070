// Package incidents holds the incidents Kavach's own tests record on
// real builds with planted faults: the client session of each, driven
// through kavach's recording proxy in front of the old build.
package incidents

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/record"
)

// Patches is the folder of the planted-fault patches for Redis.
func Patches() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "redisbuild", "testdata")
}

// Getrange builds: the old build lost the clamp of a negative GETRANGE
// start to 0, and an assertion kills it; the candidate fixes.
var (
	GetrangeOld    = []string{"getrange-crash.patch"}                     // the planted bug
	GetrangeNarrow = []string{"getrange-crash.patch", "fix-narrow.patch"} // handles only the incident's exact input
	StrlenBroken   = []string{"strlen-off-by-one.patch"}                  // fixes GETRANGE, breaks STRLEN
	// GetrangeOffByOne restores the clamp but shifts every positive start
	// by one: the incident passes, a mutated earlier GETRANGE does not.
	GetrangeOffByOne = []string{"getrange-crash.patch", "fix-breaks-positive-start.patch"}
	// EchoOld crashes on ECHO boom: an incident of one step with one
	// argument, too narrow to vary.
	EchoOld = []string{"echo-boom-crash.patch"}
)

// Getrange is the GETRANGE incident's client session: SET, APPEND,
// STRLEN, a GETRANGE that works, and GETRANGE greeting -100 -1, which
// kills the old build (step 5, a crash).
var Getrange = [][]string{
	{"SET", "greeting", "hello world"},
	{"APPEND", "greeting", "!"},
	{"STRLEN", "greeting"},
	{"GETRANGE", "greeting", "0", "4"},
	{"GETRANGE", "greeting", "-100", "-1"},
}

// Echo is the ECHO incident's session: one command that kills the old build.
var Echo = [][]string{{"ECHO", "boom"}}

// PatchPaths turns patch names into paths.
func PatchPaths(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(Patches(), n)
	}
	return out
}

// RecordGetrange records the GETRANGE incident into out on the old build.
func RecordGetrange(out, old string) error { return Record(out, old, Getrange) }

// Record records a session into out, with the old build started by the
// recording session itself: each command sent on one connection, its reply
// awaited; the last command must kill the old build.
func Record(out, old string, session [][]string) error {
	s := record.Session{Out: out, Launch: &kavach.Launch{Path: old}, Launcher: redis.Launcher{},
		Proxy: record.Options{Codec: redis.Codec{}}}
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		_, err := s.Run(context.Background(), redis.Protocol, func(a string) { addr <- a })
		done <- err
	}()
	var a string
	select {
	case a = <-addr:
	case err := <-done:
		return err
	}
	conn, err := net.Dial("tcp", a)
	if err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	send := func(args ...string) (string, error) {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		conn.Write(redis.AppendCommand(nil, b...))
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, "$") && line != "$-1\r\n" {
			rest, _ := r.ReadString('\n')
			line += rest
		}
		return line, err
	}
	for _, c := range session[:len(session)-1] {
		send(c...)
	}
	reply, err := send(session[len(session)-1]...)
	conn.Close()
	if err == nil {
		return fmt.Errorf("the old build %s answered the incident's last command (%q): the planted bug is not there", old, reply)
	}
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		return fmt.Errorf("recording did not end when the old build died")
	}
}
