package grading

import (
	"fmt"
	"os"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/integrations/redis"
)

// integration is what Kavach knows about one protocol.
type integration struct {
	codec kavach.Codec
	// launcher starts builds, giving up on one not ready within the timeout.
	launcher func(startTimeout time.Duration) kavach.Launcher
	// unredact puts a secret back where recording redacted it; nil: none.
	unredact func(request []byte, secret string) []byte
	// volatile is the codec that also leaves out the fixture's declared
	// volatile fields; nil: the integration has none to declare.
	volatile func(fields []string) kavach.Codec
	// checkArgs vets the launch arguments a fixture recorded (fixtures are
	// untrusted: see docs/security.md).
	checkArgs func(args []string) error
	// checkBuild refuses, before it starts, a build of another protocol.
	checkBuild func(path string) error
	// redactArgs removes secrets from launch arguments written to a
	// fixture (the launcher puts one back for a replay); nil: none.
	redactArgs func(args []string) []string
	// secretParams is the redactor that also redacts these query
	// parameters (--redact-param); nil: the protocol has none.
	secretParams func(names []string, base kavach.Codec) kavach.Codec
}

// integrations lists the protocols Kavach speaks, registered here
// explicitly (never from init).
func integrations() map[string]integration {
	return map[string]integration{
		redis.Protocol: {
			codec: redis.Codec{},
			launcher: func(d time.Duration) kavach.Launcher {
				return redis.Launcher{StartTimeout: d, Secret: os.Getenv("KAVACH_REDIS_SECRET")}
			},
			unredact:   redis.Unredact,
			checkArgs:  redis.CheckArgs,
			checkBuild: redis.CheckBuild,
			redactArgs: func(a []string) []string {
				out, _ := redis.RedactArgs(a)
				return out
			},
		},
		axum.Protocol: {
			codec:      axum.Codec{},
			launcher:   func(d time.Duration) kavach.Launcher { return axum.Launcher{StartTimeout: d} },
			volatile:   func(f []string) kavach.Codec { return axum.Codec{Volatile: f} },
			checkArgs:  axum.CheckArgs,
			checkBuild: axum.CheckBuild,
			secretParams: func(names []string, base kavach.Codec) kavach.Codec {
				c, _ := base.(axum.Codec)
				c.SecretParams = names
				return c
			},
		},
	}
}

// classifier and normalizer are the codec's, when it has them.
func (in integration) classifier() kavach.Classifier {
	if c, ok := in.codec.(kavach.Classifier); ok {
		return c
	}
	return nil
}

func (in integration) normalizer() kavach.Normalizer {
	if n, ok := in.codec.(kavach.Normalizer); ok {
		return n
	}
	return nil
}

// codecFor returns the codec of a fixture's protocol, or nil when no
// integration knows it (show then prints printable bytes).
func codecFor(protocol string) kavach.Codec {
	return integrations()[protocol].codec
}

// checkLaunch vets what starting builds for a fixture would do, before any
// starts: each build must not be a program of another protocol, and the
// launch arguments the fixture recorded must pass the integration's
// allowlist unless trust is set (--trust-fixture-launch).
func (in integration) checkLaunch(fx *fixtures.Fixture, trust bool, builds ...string) error {
	for _, b := range builds {
		if err := in.checkBuild(b); err != nil {
			return fmt.Errorf("%w; the fixture %s is %s: give a build that speaks it", err, fx.Path, fx.Header.Protocol)
		}
	}
	if trust || fx.Header.Launch == nil {
		return nil
	}
	if err := in.checkArgs(fx.Header.Launch.Args); err != nil {
		return fmt.Errorf("fixture %s: %w", fx.Path, err)
	}
	return nil
}
