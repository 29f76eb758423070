// Command clockbuild builds the replay's clock library (replay/clocklib)
// into Kavach's cache and prints its path: scripts/deps.sh runs it, so
// that the first replay does not compile it.
package main

import (
	"fmt"
	"os"

	"github.com/kavach-dev/kavach/replay"
)

func main() {
	lib, err := replay.ClockLibrary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "clockbuild:", err)
		os.Exit(1)
	}
	fmt.Println(lib)
}
