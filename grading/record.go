package grading

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/record"
)

// Recorded is what `kavach record` recorded to Fixture, and how the
// recording ended; package textreport says it, as text or JSON.
type Recorded struct {
	Fixture string
	Result  record.Result
}

// StateLine says on one line what a fixture holds of the state its
// recording started from, for kavach record and kavach show.
func StateLine(st *fixtures.State) string {
	what := fmt.Sprintf("%s, %d keys, %d bytes", st.Mode, st.Keys, st.Bytes)
	if st.Mode == fixtures.StateDir {
		files := "files"
		if st.Files == 1 {
			files = "file"
		}
		what = fmt.Sprintf("%s, %d %s, %d bytes", st.Mode, st.Files, files, st.Bytes)
	} else if st.Format != "" {
		what = fmt.Sprintf("%s, a %s data file of %d bytes", st.Mode, st.Format, st.Bytes)
	}
	if st.Note != "" {
		what += " (" + st.Note + ")"
	}
	return what
}

// CheckAddr says what is wrong with a HOST:PORT address.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("not a HOST:PORT address")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	if host == "" {
		return errors.New("no host")
	}
	return nil
}

// CheckRedact refuses names to redact too (kavach record --redact) when
// protocol has no named fields to redact (RedactsNames), and any name
// that cannot be a header's, a query parameter's or a JSON member's.
func CheckRedact(protocol string, names []string) error {
	if len(names) > 0 && !RedactsNames(protocol) {
		return usagef("", "--redact: the %s protocol has no named fields to redact (its passwords always are)", protocol)
	}
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, " \t\r\n:=&?#\"") {
			return usagef("", "--redact %q: give a header, query parameter or JSON member name", n)
		}
	}
	return nil
}

// SetFailOn sets in s the failure that failOn (kavach record --fail-on:
// error or error:CLASS; "" for none) names. Always on (s.Keep), an HTTP
// service's 5xx is one when failOn names none, so that its cuts have a
// failure to be cut at.
func SetFailOn(s *record.Session, protocol, failOn string) error {
	if f := failOn; f != "" {
		o, err := kavach.ParseOracle(f)
		if err != nil || o.Kind != kavach.Error {
			return usagef("", "--fail-on %q: want error or error:CLASS (mark other failures with 'kavach mark')", f)
		}
		s.Proxy.FailOn = &o
	}
	if s.Keep != nil && s.Proxy.FailOn == nil && protocol == axum.Protocol {
		s.Proxy.FailOn = &kavach.Oracle{Kind: kavach.Error, Class: "5xx"}
	}
	return nil
}

// SetStateDir checks a launched build's state directory (kavach record
// --state-dir; "" for none) against the rest of the recording and sets
// it in s: a launched build's (not s.Upstream's), of a protocol whose
// builds keep their state in files (TakesStateDir), an existing
// directory, and named {state} in the build's arguments (build: BUILD
// and its arguments, nil for none); {state} without it is refused.
// Nothing to record at all is said by the caller.
func SetStateDir(s *record.Session, protocol, dir string, build []string) error {
	names := false
	if len(build) > 0 {
		for _, a := range build[1:] {
			names = names || strings.Contains(a, "{state}")
		}
	}
	switch {
	case dir == "" && names:
		return usagef("", "the build's arguments name {state}, but no state directory was given: give --state-dir DIR (the directory of the files it loads at start-up)")
	case dir == "":
		return nil
	case s.Upstream != "":
		return usagef("", "--state-dir gives a build Kavach starts its state directory: give -- BUILD ARGS, not --upstream (a running service's state is taken with --state)")
	case !TakesStateDir(protocol):
		return usagef("", "--state-dir: the %s protocol's builds keep their state in a data file: record in front of the running service (--upstream ADDR) to take it", protocol)
	}
	if len(build) == 0 {
		return nil
	}
	if err := record.CheckStateDir(dir); err != nil {
		return usagef("", "--state-dir %q: %v: give the directory of the files the build loads at start-up and writes back", dir, err)
	}
	if !names {
		return usagef("", "--state-dir %q: the build's arguments do not name {state}, the copy of it the build is given (for example: -- BUILD --state {state})", dir)
	}
	s.StateDir = dir
	return nil
}
