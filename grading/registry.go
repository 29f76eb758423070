package grading

import (
	"sort"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/invariants"
	"github.com/kavach-dev/kavach/record"
)

// What the commands ask of the integration registry (integrations.go),
// kept apart from it: the registry is a table, these are its uses.

// Protocols are the protocols Kavach speaks, in name order.
func Protocols() []string {
	var ps []string
	for p := range integrations() {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// Speaks reports whether Kavach speaks protocol.
func Speaks(protocol string) bool {
	_, ok := integrations()[protocol]
	return ok
}

// CodecFor returns the codec of a protocol, or nil when no integration
// knows it (kavach show then prints printable bytes).
func CodecFor(protocol string) kavach.Codec { return codecFor(protocol) }

// RedactsNames reports whether protocol has named fields (headers, query
// parameters, JSON members) that recording can be told to redact.
func RedactsNames(protocol string) bool {
	return integrations()[protocol].secretParams != nil
}

// Launcher starts builds of protocol, giving up on one not ready within
// startTimeout; nil when no integration speaks it.
func Launcher(protocol string, startTimeout time.Duration) kavach.Launcher {
	in, ok := integrations()[protocol]
	if !ok {
		return nil
	}
	return in.launcher(startTimeout)
}

// SetupRecording gives a recording session of protocol its codec,
// classifier and redactor (unless keepSecrets), the named fields to
// redact too, and, when it launches a build, the launcher. protocol must
// be one Kavach speaks (Speaks).
func SetupRecording(s *record.Session, protocol string, redact []string, keepSecrets bool, startTimeout time.Duration) {
	in := integrations()[protocol]
	s.Proxy.Codec = in.codec
	if s.Launch != nil {
		s.Launcher = in.launcher(startTimeout)
	}
	if cl, ok := in.codec.(kavach.Classifier); ok {
		s.Proxy.Classifier = cl
	}
	if r, ok := in.codec.(kavach.Redactor); ok && !keepSecrets {
		s.Proxy.Redactor = r
		if len(redact) > 0 && in.secretParams != nil {
			s.Proxy.Redactor = in.secretParams(redact, in.codec).(kavach.Redactor)
			s.Redact = redact
		}
		s.RedactArgs = in.redactArgs
	}
}

// FailureAt is the failure at step n of fx by oracle o, as kavach mark
// records it (record.FailureAt with the fixture's codec).
func FailureAt(fx *fixtures.Fixture, n int, o kavach.Oracle) (kavach.Failure, error) {
	return record.FailureAt(fx, CodecFor(fx.Header.Protocol), n, o)
}

// CheckMark refuses a failure the recording does not show (grade.CheckMark
// with the fixture's integration).
func CheckMark(fx *fixtures.Fixture, set *invariants.Set, f kavach.Failure) error {
	in := integrations()[fx.Header.Protocol]
	return grade.CheckMark(fx, in.codec, in.classifier(), in.normalizer(), set, f)
}
