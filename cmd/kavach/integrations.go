package main

import (
	"github.com/kavach-dev/kavach"
)

// codecFor returns the codec of a fixture's protocol, or nil when no
// integration knows it (show then prints printable bytes).
func codecFor(protocol string) kavach.Codec {
	return nil
}
