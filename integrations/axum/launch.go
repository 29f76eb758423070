package axum

import (
	"strings"

	"github.com/kavach-dev/kavach/launch"
)

// CheckArgs checks the launch arguments a fixture recorded before a build
// is started with them. An HTTP service's options are its own, so nothing
// but the port Kavach gives it is allowed: "--port {port}" (or
// "--port={port}"). Anything else is refused with the argument named.
func CheckArgs(args []string) error {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--port={port}":
		case a == "--port" && i+1 < len(args) && args[i+1] == "{port}":
			i++
		case a == "--port" && i+1 < len(args):
			return &launch.LaunchRefused{Arg: a + " " + args[i+1], Why: "a network setting, which Kavach sets itself ({port})"}
		default:
			why := "an option of the service, which Kavach cannot tell safe"
			if strings.ContainsAny(a, "\x00\r\n") {
				why = "it holds a control character"
			}
			return &launch.LaunchRefused{Arg: a, Why: why}
		}
	}
	return nil
}

// CheckBuild refuses, before it is started, a build that is a Redis or
// Valkey server: an HTTP fixture cannot be replayed on it.
func CheckBuild(path string) error {
	return launch.CheckExecutable(path, "an HTTP service", nil, []string{"redis_version:", "valkey_version:"})
}
