package grading

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/replay"
)

// Opened is a fixture opened by Open (a fixtures.Recording: read once,
// its steps grouped once), with the integration that speaks its
// protocol. A short fixture is in memory; a long one (more than
// grade.DefaultLongSteps steps, or any opened to be streamed) is
// summarized and streamed from its file: its events are never all in
// memory (docs/diff.md, "Long recordings").
type Opened struct {
	*fixtures.Recording
	path string // as given
	in   kavach.Integration
	fx   *fixtures.Fixture // its records; its events only when short
}

// Reading is what a verb opens a fixture for, which says how much of
// it Open reads and which integration describes it.
type Reading int

const (
	// ToGrade (kavach diff): a short fixture read whole in one pass, its
	// steps grouped once and its SHA-256 taken as it is read; a long one
	// (more than grade.DefaultLongSteps steps) summarized and streamed.
	ToGrade Reading = iota
	// ToReplay (kavach replay): summarized and streamed, whatever its
	// length.
	ToReplay
	// ToVary (kavach variants): whole, whatever its length; the variants
	// are made from its events.
	ToVary
	// ToMark (kavach mark): whole, its steps as recorded (the codec of its
	// protocol, without the header's volatile fields or secret
	// parameters); a protocol Kavach does not speak is grouped by
	// connection alone.
	ToMark
	// ToShow (kavach show): summarized and streamed, described as
	// recorded, as ToMark; a protocol Kavach does not speak is shown as
	// printable bytes.
	ToShow
	// ToCheck: its header alone, before anything starts (a suite's
	// fixtures, each a fixture whose protocol Kavach speaks).
	ToCheck
)

// Open opens the fixture at path for what how says. Every verb opens
// its fixture here: a file that cannot be read, is not a fixture, is
// damaged, or names a protocol Kavach does not speak (where the verb
// needs one) gives the same error, naming the path, whatever the verb.
// A fixture that did not end cleanly opens, with Warning set.
func Open(path string, how Reading) (*Opened, error) {
	codec := func(h fixtures.Header) (kavach.Integration, error) {
		if how == ToMark || how == ToShow {
			return codecFor(h.Protocol), nil
		}
		return integrationOf(path, h)
	}
	var rec *fixtures.Recording
	switch how {
	case ToGrade, ToVary, ToMark:
		limit := grade.DefaultLongSteps
		if how != ToGrade {
			limit = math.MaxInt
		}
		var err error
		if rec, err = fixtures.OpenRecording(path, limit, codec); err != nil {
			return nil, err
		}
	case ToReplay, ToShow, ToCheck:
		r, err := fixtures.Open(path)
		if err != nil {
			return nil, err
		}
		h := r.Header()
		r.Close()
		in, err := codec(h)
		if err != nil {
			return nil, err
		}
		if how == ToCheck {
			rec = fixtures.NewRecording(&fixtures.Fixture{Path: path, Header: h}, in)
		} else if rec, err = fixtures.StreamRecording(path, in); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("fixture %s: opened for reading %d, which grading does not know", path, how)
	}
	return &Opened{Recording: rec, path: path, in: rec.Integration(), fx: rec.Fixture()}, nil
}

// Path is the fixture's path, as given.
func (r *Opened) Path() string { return r.path }

// Codec is the integration of the fixture's protocol, told its volatile
// fields and secret parameters.
func (r *Opened) Codec() kavach.Integration { return r.in }

// CheckLaunch vets what starting builds for the fixture would do, before
// any starts (see checkLaunch); trust is --trust-fixture-launch.
func (r *Opened) CheckLaunch(trust bool, builds ...string) error {
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
func (r *Opened) Launch(build string) kavach.Launch {
	l := kavach.Launch{Path: build}
	if r.fx.Header.Launch != nil {
		l.Args = r.fx.Header.Launch.Args
	}
	return l
}

// ReplayOptions are the options a replay of the fixture takes: its
// integration (with startTimeout), the recording's start, and the secret
// of KAVACH_REDIS_SECRET put back.
func (r *Opened) ReplayOptions(timeout, startTimeout time.Duration) replay.Options {
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
