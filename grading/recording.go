package grading

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/replay"
)

// Recording is a fixture opened for grading, with the integration that
// speaks its protocol. A short fixture is read once, whole: its events
// in memory, its steps grouped once, its SHA-256 taken as it was read. A
// long one (more than grade.DefaultLongSteps steps, or any opened with
// Skim) is summarized and streamed from its file: its events are never
// all in memory (docs/diff.md, "Long recordings").
type Recording struct {
	path  string
	fx    *fixtures.Fixture // its records; its events only when short
	steps []kavach.Step     // short: every step
	sum   *fixtures.Summary // long: the fixture read without its events
	sha   string            // short: the file's SHA-256
	in    kavach.Integration
}

// Open opens the fixture at path for grading: a short fixture is read
// once, whole; a long one is summarized (a pass that keeps no event).
func Open(path string) (*Recording, error) {
	rec := &Recording{path: path}
	fx, steps, sha, long, err := fixtures.LoadUpTo(path, grade.DefaultLongSteps, func(h fixtures.Header) (kavach.Integration, error) {
		in, err := integrationOf(path, h)
		rec.in = in
		return in, err
	})
	if err != nil {
		return nil, err
	}
	if long {
		return rec, rec.summarize()
	}
	rec.fx, rec.steps, rec.sha = fx, steps, sha
	return rec, nil
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
	rec := &Recording{path: path, in: in}
	return rec, rec.summarize()
}

// summarize reads the fixture once without keeping its events.
func (r *Recording) summarize() error {
	sum, err := fixtures.Summarize(r.path, r.in)
	if err != nil {
		return err
	}
	r.sum = sum
	r.fx = &fixtures.Fixture{Path: r.path, Header: sum.Header, Failure: sum.Failure, Invariants: sum.Invariants,
		Redactions: sum.Redactions, End: sum.End, Warning: sum.Warning}
	return nil
}

// Path is the fixture's path, as given.
func (r *Recording) Path() string { return r.path }

// Long reports whether the fixture is streamed from its file.
func (r *Recording) Long() bool { return r.sum != nil }

// Len is how many steps the fixture has.
func (r *Recording) Len() int {
	if r.sum != nil {
		return r.sum.Steps
	}
	return len(r.steps)
}

// EachStep calls fn with every step, in order, until fn returns an
// error, which EachStep returns. A streamed step's data is valid only
// during the call.
func (r *Recording) EachStep(fn func(kavach.Step) error) error {
	if r.sum != nil {
		return r.sum.EachStep(fn)
	}
	for _, s := range r.steps {
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}

// Header is the fixture's header.
func (r *Recording) Header() fixtures.Header { return r.fx.Header }

// Failure is the fixture's failure, nil for a contract.
func (r *Recording) Failure() *kavach.Failure { return r.fx.Failure }

// Records are the fixture's records but its events (which EachStep
// gives): failure, invariants, redactions, end.
func (r *Recording) Records() *fixtures.Fixture {
	fx := *r.fx
	fx.Events = nil
	return &fx
}

// Summary is a long fixture read without its events, nil for a short one.
func (r *Recording) Summary() *fixtures.Summary { return r.sum }

// Warning is the fixture's warning (a recording that did not end
// cleanly), or nil.
func (r *Recording) Warning() error { return r.fx.Warning }

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
	secret := os.Getenv("KAVACH_REDIS_SECRET")
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
