package grading

import (
	"context"
	"fmt"
	"os"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/integrations/redis"
)

// integrations lists the protocols Kavach speaks, registered here
// explicitly (never from init). Each is told what it needs from the
// environment (replaySecret) here.
func integrations() map[string]kavach.Integration {
	return map[string]kavach.Integration{
		redis.Protocol: redis.Integration{Secret: replaySecret()},
		axum.Protocol:  axum.Integration{},
	}
}

// replaySecret is the password a replay puts back where a recording
// redacted it (KAVACH_REDIS_SECRET, docs/security.md), read from the
// environment here and nowhere else: by the integration a command uses
// and by the options its replays take.
func replaySecret() string { return os.Getenv("KAVACH_REDIS_SECRET") }

// TakesStateDir reports whether protocol's launched builds can be given
// a state directory (kavach record --state-dir): services whose state is
// files they load at start-up and write back. A Redis build's state is
// its data file, taken from a running service (--upstream, --state).
func TakesStateDir(protocol string) bool { return protocol == axum.Protocol }

// codecFor returns the integration of a fixture's protocol, or nil when
// none knows it (show then prints printable bytes).
func codecFor(protocol string) kavach.Integration {
	return integrations()[protocol]
}

// checkLaunch vets what starting builds for a fixture would do, before any
// starts: each build must not be a program of another protocol, and the
// launch arguments the fixture recorded must pass the integration's
// allowlist unless trust is set (--trust-fixture-launch).
func checkLaunch(ctx context.Context, in kavach.Integration, fx *fixtures.Fixture, trust bool, builds ...string) error {
	for _, b := range builds {
		if err := in.CheckBuild(ctx, b); err != nil {
			return fmt.Errorf("%w; the fixture %s is %s: give a build that speaks it", err, fx.Path, fx.Header.Protocol)
		}
	}
	if trust || fx.Header.Launch == nil {
		return nil
	}
	if err := in.CheckArgs(fx.Header.Launch.Args); err != nil {
		return fmt.Errorf("fixture %s: %w", fx.Path, err)
	}
	return nil
}
