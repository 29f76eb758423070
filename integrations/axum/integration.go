package axum

import (
	"context"
	"time"

	"github.com/kavach-dev/kavach"
)

var _ kavach.Integration = Integration{}

// WithStartTimeout is in with StartTimeout d (zero: the default).
func (in Integration) WithStartTimeout(d time.Duration) kavach.Integration {
	in.StartTimeout = d
	return in
}

// CheckBuild refuses an executable that is a Redis or Valkey server.
func (Integration) CheckBuild(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return CheckBuild(path)
}

// CheckArgs is the package's CheckArgs.
func (Integration) CheckArgs(args []string) error { return CheckArgs(args) }

// Abilities are what HTTP offers beyond framing: redaction, variants in
// its own words, keys (paths), invariants, volatile headers and secret
// parameters. It has no resync, clock, containment or fingerprint.
func (in Integration) Abilities() kavach.Abilities {
	return kavach.Abilities{
		Redaction: &kavach.Redaction{
			Request:            in.Redact,
			ReplyMayHoldSecret: in.ReplyMayHoldSecret,
			Reply:              in.RedactReply,
			Raw:                in.RedactRaw,
		},
		Variation: &kavach.Variation{
			Fields:         in.Fields,
			Rebuild:        in.Rebuild,
			ReadsAggregate: in.ReadsAggregate,
			FieldName:      in.FieldName,
			KeyWords:       in.KeyWords,
		},
		Keys:    in.Keys,
		Inspect: in.Inspect,
		Writes:  in.Writes,
		Volatile: func(fields []string) kavach.Integration {
			in.Volatile = fields
			return in
		},
		SecretParams: func(names []string) kavach.Integration {
			in.SecretParams = names
			return in
		},
	}
}
