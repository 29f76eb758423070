package axum

import (
	"strings"

	"github.com/kavach-dev/kavach/launch"
)

// CheckArgs checks the launch arguments a fixture recorded before a build
// is started with them. An HTTP service's options are its own, so nothing
// but what Kavach gives it is allowed: the port, "--port {port}" (or
// "--port={port}"), and the copy of the state directory the fixture
// holds, "--state {state}" (or "--state={state}"). Anything else is
// refused with the argument named.
func CheckArgs(args []string) error {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--port={port}", a == "--state={state}":
		case a == "--port" && i+1 < len(args) && args[i+1] == "{port}",
			a == "--state" && i+1 < len(args) && args[i+1] == "{state}":
			i++
		case a == "--state" && i+1 < len(args):
			return &launch.LaunchRefused{Arg: a + " " + args[i+1], Why: "a state directory, which Kavach gives the build itself ({state})"}
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
