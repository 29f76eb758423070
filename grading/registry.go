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

// CodecFor returns the integration of a protocol, or nil when none knows
// it (kavach show then prints printable bytes).
func CodecFor(protocol string) kavach.Integration { return codecFor(protocol) }

// RedactsNames reports whether protocol has named fields (headers, query
// parameters, JSON members) that recording can be told to redact.
func RedactsNames(protocol string) bool {
	in, ok := integrations()[protocol]
	return ok && in.Abilities().SecretParams != nil
}

// Integration is the integration of protocol, giving up on a build not
// ready within startTimeout; nil when none speaks it.
func Integration(protocol string, startTimeout time.Duration) kavach.Integration {
	in, ok := integrations()[protocol]
	if !ok {
		return nil
	}
	return in.WithStartTimeout(startTimeout)
}

// SetupRecording gives a recording session of protocol its integration
// (with startTimeout, when it launches a build) and redaction (unless
// keepSecrets), the named fields to redact too. protocol must be one
// Kavach speaks (Speaks).
func SetupRecording(s *record.Session, protocol string, redact []string, keepSecrets bool, startTimeout time.Duration) {
	in := integrations()[protocol]
	s.Proxy.Codec = in
	if s.Launch != nil {
		s.Proxy.Codec = in.WithStartTimeout(startTimeout)
	}
	if ab := in.Abilities(); ab.Redaction != nil && !keepSecrets {
		s.Proxy.Redactor = ab.Redaction
		if len(redact) > 0 && ab.SecretParams != nil {
			s.Proxy.Redactor = ab.SecretParams(redact).Abilities().Redaction
			s.Redact = redact
		}
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
	return grade.CheckMark(fx, integrations()[fx.Header.Protocol], set, f)
}
