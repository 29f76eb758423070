package main

import (
	"time"

	"github.com/kavach-dev/kavach"
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
}

// integrations lists the protocols Kavach speaks, registered here
// explicitly (never from init).
func integrations() map[string]integration {
	return map[string]integration{
		redis.Protocol: {
			codec:    redis.Codec{},
			launcher: func(d time.Duration) kavach.Launcher { return redis.Launcher{StartTimeout: d} },
			unredact: redis.Unredact,
		},
		axum.Protocol: {
			codec:    axum.Codec{},
			launcher: func(d time.Duration) kavach.Launcher { return axum.Launcher{StartTimeout: d} },
			volatile: func(f []string) kavach.Codec { return axum.Codec{Volatile: f} },
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
