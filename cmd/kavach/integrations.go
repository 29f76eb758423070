package main

import (
	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
)

// integration is what Kavach knows about one protocol.
type integration struct {
	codec    kavach.Codec
	launcher kavach.Launcher
}

// integrations lists the protocols Kavach speaks, registered here
// explicitly (never from init).
func integrations() map[string]integration {
	return map[string]integration{
		redis.Protocol: {codec: redis.Codec{}, launcher: redis.Launcher{}},
	}
}

// codecFor returns the codec of a fixture's protocol, or nil when no
// integration knows it (show then prints printable bytes).
func codecFor(protocol string) kavach.Codec {
	return integrations()[protocol].codec
}
