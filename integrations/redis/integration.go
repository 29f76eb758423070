package redis

import (
	"context"
	"time"

	"github.com/kavach-dev/kavach"
)

// Integration is Redis (and Valkey) for Kavach. Its messages are RESP:
// requests and replies framed by Split and described as redis-cli does;
// that part is stateless and safe for concurrent use. Its builds are
// redis-server and valkey-server: a free loopback port, a fresh directory,
// persistence off. A launch's arguments come after Kavach's defaults (so
// they win over those) and before its safety settings (which win over
// them: see SafetyArgs). A build is ready when its port accepts a
// connection and its main thread waits in its event loop (read from
// /proc: the server is sent no request it could count); it is stopped
// with SHUTDOWN NOSAVE, then SIGTERM, then SIGKILL of the process group.
type Integration struct {
	// Env is added to the build's environment (the clock library's variables, say).
	Env []string
	// StartTimeout bounds start-up; zero means 10 s.
	StartTimeout time.Duration
	// Secret is put back where recording redacted a password from the
	// launch arguments (see UnredactArgs), at the moment the build is
	// started: the Launch a report shows keeps Redacted, and a start-up
	// error shows Redacted where the build's output quoted the secret.
	Secret string
}

var _ kavach.Integration = Integration{}

// Protocol returns "resp".
func (Integration) Protocol() string { return Protocol }

// WithStartTimeout is in with StartTimeout d (zero: the default).
func (in Integration) WithStartTimeout(d time.Duration) kavach.Integration {
	in.StartTimeout = d
	return in
}

// CheckBuild refuses an executable that is not a Redis or Valkey server.
func (Integration) CheckBuild(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return CheckBuild(path)
}

// CheckArgs is the package's CheckArgs.
func (Integration) CheckArgs(args []string) error { return CheckArgs(args) }

// Abilities are everything Redis offers beyond framing: all but the
// HTTP-only ones (Volatile, SecretParams, the variants' own wording). None
// but the Redaction depends on the Integration's fields, so they are made
// once; each call gets its own copies of the structs they point to. Each
// call gets a Redaction of its own, which remembers the secrets it sees
// (one per recording: newRedaction), Secret among them.
func (in Integration) Abilities() kavach.Abilities {
	ab := abilities
	v, fp := *ab.Variation, *ab.Fingerprint
	ab.Variation, ab.Fingerprint = &v, &fp
	ab.Redaction = newRedaction(in.Secret)
	return ab
}

var abilities = func() kavach.Abilities {
	var in Integration
	return kavach.Abilities{
		Resync:           in.Resync,
		MinFrameLen:      in.MinFrameLen,
		Identify:         in.Identify,
		Settle:           in.Settle,
		NewContainment:   in.NewContainment,
		NewIdentities:    in.NewIdentities,
		ClockReads:       in.ClockReads,
		DeliberateCloses: true,
		Variation:        variation(in, nil),
		Learn:            in.Learn,
		Keys:             in.Keys,
		Inspect:          in.Inspect,
		Writes:           in.Writes,
		Fingerprint:      &kavach.Fingerprinting{Launch: in.FingerprintLaunch, NewProbe: in.NewProbe, Content: FingerprintContent},
		SetsState:        in.SetsState,
		Kin:              in.Kin,
		Group:            in.Group,
		RedactArgs: func(args []string) []string {
			out, _ := RedactArgs(args)
			return out
		},
		Unredact: Unredact,
		Restore:  in.Restore,
		Held:     in.Held,
		DataFile: DataFile,
		SaveData: SaveData,
		State: &kavach.StateTaking{
			Format:   "rdb",
			Snapshot: Snapshot,
			NewToucher: func(ctx context.Context, addr string, capture bool) (kavach.Toucher, error) {
				return NewToucher(ctx, addr, capture)
			},
			Cut:        CutSnapshot,
			Executable: Executable,
			Watch: func(ctx context.Context, addr string) (kavach.Watcher, error) {
				return NewWatcher(ctx, addr)
			},
		},
	}
}()

// variation is the Variation of in, or of the requests sent after
// earlier when earlier is not nil (After).
func variation(in Integration, earlier [][]byte) *kavach.Variation {
	v := &kavach.Variation{
		Fields:          in.Fields,
		Rebuild:         in.Rebuild,
		Types:           in.Substitutions,
		Grammar:         in.Rewrites,
		Siblings:        in.Siblings,
		Translate:       in.Translate,
		Values:          in.Values,
		LeftWhole:       in.LeftWhole,
		After:           in.After,
		TypedSiblings:   in.TypedSiblings,
		SiteTransplants: in.SiteTransplants,
		BlockingFields:  in.BlockingFields,
		ReadsAggregate:  in.ReadsAggregate,
		Modes:           in.Modes,
	}
	if earlier != nil {
		a := afterCodec{Integration: in, earlier: earlier}
		v.Values, v.LeftWhole, v.Siblings = a.Values, a.LeftWhole, a.Siblings
		v.TypedSiblings, v.SiteTransplants = a.TypedSiblings, a.SiteTransplants
	}
	return v
}
