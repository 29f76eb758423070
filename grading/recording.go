package grading

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/replay"
)

// Recording is a fixture opened for grading (a fixtures.Recording: read
// once, its steps grouped once), with the integration that speaks its
// protocol. A short fixture is in memory; a long one (more than
// grade.DefaultLongSteps steps, or any opened with Skim) is summarized and
// streamed from its file: its events are never all in memory
// (docs/diff.md, "Long recordings").
type Recording struct {
	*fixtures.Recording
	path string // as given
	in   kavach.Integration
	fx   *fixtures.Fixture // its records; its events only when short
}

// wrap is the grading Recording of rec, opened from path.
func wrap(path string, rec *fixtures.Recording) *Recording {
	return &Recording{Recording: rec, path: path, in: rec.Integration(), fx: rec.Fixture()}
}

// Open opens the fixture at path for grading: a short fixture is read
// once, whole; a long one is summarized (a pass that keeps no event).
func Open(path string) (*Recording, error) {
	rec, err := fixtures.OpenRecording(path, grade.DefaultLongSteps, func(h fixtures.Header) (kavach.Integration, error) {
		return integrationOf(path, h)
	})
	if err != nil {
		return nil, err
	}
	return wrap(path, rec), nil
}

// Skim opens the fixture at path to be streamed, whatever its length:
// what a replay of it needs (kavach replay).
func Skim(path string) (*Recording, error) {
	r, err := fixtures.Open(path)
	if err != nil {
		return nil, err
	}
	h := r.Header()
	r.Close()
	in, err := integrationOf(path, h)
	if err != nil {
		return nil, err
	}
	rec, err := fixtures.StreamRecording(path, in)
	if err != nil {
		return nil, err
	}
	return wrap(path, rec), nil
}

// Path is the fixture's path, as given.
func (r *Recording) Path() string { return r.path }

// Codec is the integration of the fixture's protocol, told its volatile
// fields and secret parameters.
func (r *Recording) Codec() kavach.Integration { return r.in }

// CheckLaunch vets what starting builds for the fixture would do, before
// any starts (see checkLaunch); trust is --trust-fixture-launch.
func (r *Recording) CheckLaunch(trust bool, builds ...string) error {
	return checkLaunch(context.Background(), r.in, r.fx, trust, builds...)
}

// integrationOf is the integration that speaks the protocol of the
// fixture at path, whose header is h, told the header's volatile fields
// and secret parameters.
func integrationOf(path string, h fixtures.Header) (kavach.Integration, error) {
	in, ok := integrations()[h.Protocol]
	if !ok {
		return nil, fmt.Errorf("fixture %s: protocol %q: Kavach speaks %s", path, h.Protocol, strings.Join(Protocols(), ", "))
	}
	if volatile := in.Abilities().Volatile; len(h.Volatile) > 0 && volatile != nil {
		in = volatile(h.Volatile)
	}
	if secretParams := in.Abilities().SecretParams; len(h.Redact) > 0 && secretParams != nil {
		in = secretParams(h.Redact)
	}
	return in, nil
}

// Launch starts build the way the fixture's old build was started. A
// password recording redacted from the arguments stays Redacted here (this
// Launch is shown in outputs and reports): the launcher puts the secret of
// KAVACH_REDIS_SECRET back as it starts the build.
func (r *Recording) Launch(build string) kavach.Launch {
	l := kavach.Launch{Path: build}
	if r.fx.Header.Launch != nil {
		l.Args = r.fx.Header.Launch.Args
	}
	return l
}

// ReplayOptions are the options a replay of the fixture takes: its
// integration (with startTimeout), the recording's start, and the secret
// of KAVACH_REDIS_SECRET put back.
func (r *Recording) ReplayOptions(timeout, startTimeout time.Duration) replay.Options {
	in, fx := r.in, r.fx
	opts := replay.Options{
		Integration: in.WithStartTimeout(startTimeout),
		StepTimeout: timeout, Start: fx.Header.Start,
	}
	ab := in.Abilities()
	secret := replaySecret()
	if secret != "" && ab.Unredact != nil {
		opts.Prepare = func(b []byte) []byte { return ab.Unredact(b, secret) }
	}
	// A fixture with redactions compares replies as they were written:
	// with the secrets in them redacted the same way.
	if red := ab.Redaction; red != nil && red.Reply != nil && len(fx.Redactions) > 0 {
		opts.Integration = redactingIntegration{Integration: opts.Integration, red: red, unredact: ab.Unredact, secret: secret}
	}
	return opts
}

// redactingIntegration redacts a reply (see kavach.Redaction) before
// normalizing it, so that a replayed reply holding a secret compares equal
// to the recorded one, where recording redacted it. The request is taken
// with the secret put back, so that an echo of it is found.
type redactingIntegration struct {
	kavach.Integration
	red      *kavach.Redaction
	unredact func(request []byte, secret string) []byte // nil: none
	secret   string
}

func (r redactingIntegration) Normalize(request, response []byte) any {
	req := request
	if r.secret != "" && r.unredact != nil {
		req = r.unredact(request, r.secret)
	}
	var full []byte
	if r.red.ReplyMayHoldSecret != nil && r.red.ReplyMayHoldSecret(req) {
		full = req
	}
	if out, note := r.red.Reply(full, response); note != "" {
		response = out
	}
	// The reply to bytes the codec cannot frame, by pattern, as recording did.
	if r.red.Raw != nil {
		if n, err := r.SplitRequest(request); err != nil || n != len(request) {
			if out, note := r.red.Raw(response, false); note != "" {
				response = out
			}
		}
	}
	return r.Integration.Normalize(request, response)
}
