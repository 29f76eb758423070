package redis

import (
	"strings"

	"github.com/kavach-dev/kavach"
)

// Modes are the connection modes that change what a connection's
// commands do, each turned the other way from where the connection's
// earlier requests left it (kavach.Variation.Modes; docs/variants.md,
// "Connection modes"):
//
//   - the protocol: HELLO 3 on a connection that speaks RESP2 (every
//     connection starts so), HELLO 2 on one that asked for RESP3. Replies
//     take other shapes (a double, a map, a null) and reach the client
//     through other code: a fix can mend one shape and not the other.
//   - CLIENT NO-TOUCH (Redis 7.2 on): reads that do not touch a key's
//     access time, which LRU and LFU eviction, OBJECT IDLETIME and
//     OBJECT FREQ read. Offered only when the build has the command
//     (COMMAND INFO answered CLIENT|NO-TOUCH) or is not known, and for a
//     request that names a key (COMMAND INFO's key positions or key
//     specs; without the build's word, one with arguments): it changes
//     nothing else.
//
// Left out: CLIENT TRACKING (its invalidations are pushes that arrive
// between replies), CLIENT REPLY (it takes the replies away), READONLY
// (cluster only), CLIENT NO-EVICT (it changes only which client is
// evicted when clients take too much memory, not what a command does),
// SELECT (another database is other keys, not another mode).
func (Integration) Modes(request []byte, earlier [][]byte, schema kavach.Schema) []kavach.Mode {
	resp3, noTouch := false, false
	for _, r := range earlier {
		c, err := ParseCommand(r)
		if err != nil {
			continue
		}
		args := func(i int) string {
			if i < len(c.Args) {
				return strings.ToUpper(string(c.Args[i]))
			}
			return ""
		}
		switch {
		case c.Name == "HELLO" && args(1) != "":
			resp3 = args(1) == "3"
		case c.Name == "RESET":
			resp3, noTouch = false, false
		case c.Name == "CLIENT" && args(1) == "NO-TOUCH":
			noTouch = args(2) == "ON"
		}
	}
	var out []kavach.Mode
	if resp3 {
		out = append(out, kavach.Mode{Request: command([]string{"HELLO", "2"}), What: "RESP2 (HELLO 2); the connection spoke RESP3"})
	} else {
		out = append(out, kavach.Mode{Request: command([]string{"HELLO", "3"}), What: "RESP3 (HELLO 3); the connection spoke RESP2"})
	}
	if l, ok := schema.(*Learned); (!ok || l == nil || hasCommand(l, "CLIENT|NO-TOUCH")) && namesKeys(request, l) {
		if noTouch {
			out = append(out, kavach.Mode{Request: command([]string{"CLIENT", "NO-TOUCH", "OFF"}), What: "reads touch keys again (CLIENT NO-TOUCH OFF)"})
		} else {
			out = append(out, kavach.Mode{Request: command([]string{"CLIENT", "NO-TOUCH", "ON"}), What: "reads do not touch keys (CLIENT NO-TOUCH ON)"})
		}
	}
	return out
}

// hasCommand reports whether the build answered COMMAND INFO for name
// (a subcommand as "CLIENT|NO-TOUCH"): Learn asks it about CLIENT and
// its subcommands, for Modes.
func hasCommand(l *Learned, name string) bool {
	_, ok := l.Keys[name]
	return ok
}

// namesKeys reports whether request's command names keys: as the build
// said (COMMAND INFO's first key position, or key specs), else, not
// asked, whether it has arguments.
func namesKeys(request []byte, l *Learned) bool {
	c, err := ParseCommand(request)
	if err != nil {
		return false
	}
	if l == nil || l.Keys == nil {
		return len(c.Args) > 1
	}
	return l.Keys[c.Name].First > 0 || len(l.Specs[c.Name]) > 0
}
