package redis

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"strings"

	"github.com/kavach-dev/kavach"
)

// Containment: where the kernel refuses a build a network namespace of
// its own, the build shares the machine's network, and Kavach withholds
// the requests that would open it to that network or reach out of it
// (docs/security.md, "Contained"). What is withheld, and why:
//
//   - CONFIG SET of a network setting (bind, bind-source-addr, port,
//     protected-mode, tls-*, unixsocket*, tcp-backlog), a replication
//     setting (replicaof, slaveof, masterauth, masteruser, primary*,
//     replica-announce-*, cluster-announce-*), or a filesystem setting
//     (dir, dbfilename, logfile, pidfile, appendfilename, appenddirname,
//     aclfile, cluster-config-file): a listener opened, a connection made,
//     a file written where the fixture chooses. A CONFIG SET naming one
//     of them among others is withheld whole.
//   - REPLICAOF and SLAVEOF (but NO ONE), MIGRATE, FAILOVER, CLUSTER MEET
//     (outbound connections), MODULE LOAD and LOADEX (code).
//   - Scripts that call MIGRATE (the only one of these Redis lets a script
//     call): EVAL, EVAL_RO, SCRIPT LOAD and FUNCTION LOAD of a body that
//     names it, in any case; EVALSHA and EVALSHA_RO of a body withheld so;
//     and, once a library was withheld, FCALL and FCALL_RO. A body that
//     spells it some other way ('MIG'..'RATE') is stopped by the build
//     itself: in this mode Kavach starts it with MIGRATE removed
//     (SharedArgs).
//   - Inside MULTI, a command above is withheld as anywhere; the EXEC of
//     that transaction is sent (the rest of it runs, as recorded) but its
//     reply, short of the withheld command's, is not compared.
//   - Bytes the codec cannot frame that name any of these commands.
//
// Not withheld: DEBUG (refused by the build unless the fixture's launch
// enables it; none of its subcommands reaches beyond the build and its
// fresh directory, and incidents use DEBUG SEGFAULT), SHUTDOWN, SAVE,
// BGSAVE, BGREWRITEAOF (into the build's fresh directory, which a
// fixture cannot move), SYNC and PSYNC (Kavach's own connection becomes
// the replica), ACL SAVE and LOAD, CONFIG REWRITE (no file is configured:
// the build refuses them).

// ContainedReply is Kavach's answer to a request it withholds.
const ContainedReply = "-ERR kavach: contained (network namespaces unavailable)\r\n"

// SharedArgs come after SafetyArgs where a build shares the machine's
// network: MIGRATE removed, so that no script reaches it however it
// spells the name.
var SharedArgs = []string{"--rename-command", "MIGRATE", ""}

// NewContainment starts one replay's decisions (see above).
func (Integration) NewContainment() kavach.Containment {
	return &containment{multi: map[uint64]bool{}, lost: map[uint64]bool{}, scripts: map[string]bool{}}
}

type containment struct {
	multi     map[uint64]bool // connections inside MULTI
	lost      map[uint64]bool // of those, the ones whose transaction lost a command
	scripts   map[string]bool // SHA1 (lower-case hex) of the script bodies withheld
	libraries bool            // a FUNCTION LOAD was withheld
}

// containedConfig are the settings whose CONFIG SET is withheld; prefixes
// end in '-' or are listed in containedPrefixes.
var containedConfig = setOf(
	"bind", "bind-source-addr", "port", "protected-mode", "tcp-backlog",
	"replicaof", "slaveof", "masterauth", "masteruser", "primaryauth", "primaryuser",
	"dir", "dbfilename", "logfile", "pidfile", "appendfilename", "appenddirname", "aclfile", "cluster-config-file",
)

var containedPrefixes = []string{"tls-", "unixsocket", "replica-announce", "slave-announce", "cluster-announce"}

func containedSetting(name string) bool {
	name = strings.ToLower(name)
	if containedConfig[name] {
		return true
	}
	for _, p := range containedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func (c *containment) Contain(conn uint64, request []byte, raw bool) (kavach.ContainAction, []byte, string) {
	if name, ok := peekName(request); ok && !raw && !nameIn(name, containNames...) {
		return kavach.Send, nil, "" // the common case, decided without parsing the arguments
	}
	var why, name string
	if cmd, err := ParseCommand(request); raw || err != nil {
		why = rawWhy(request)
	} else {
		why, name = c.why(cmd), cmd.Name
	}
	switch {
	case why != "":
		if c.multi[conn] {
			c.lost[conn] = true
		}
		return kavach.Withhold, []byte(ContainedReply), why
	case name == "MULTI":
		c.multi[conn] = true
	case name == "EXEC" || name == "DISCARD" || name == "RESET":
		lost := c.lost[conn]
		delete(c.multi, conn)
		delete(c.lost, conn)
		if lost && name == "EXEC" {
			return kavach.SendUncompared, nil, "its transaction lost a withheld command"
		}
	}
	return kavach.Send, nil, ""
}

// why says why cmd is withheld, or "".
func (c *containment) why(cmd Command) string {
	sub := ""
	if len(cmd.Args) > 1 {
		sub = strings.ToUpper(string(cmd.Args[1]))
	}
	switch cmd.Name {
	case "CONFIG":
		if sub != "SET" {
			return ""
		}
		for i := 2; i < len(cmd.Args); i += 2 {
			if containedSetting(string(cmd.Args[i])) {
				return "CONFIG SET " + strings.ToLower(string(cmd.Args[i])) + ": a network, replication or filesystem setting"
			}
		}
	case "REPLICAOF", "SLAVEOF":
		if len(cmd.Args) == 3 && sub == "NO" && strings.EqualFold(string(cmd.Args[2]), "ONE") {
			return ""
		}
		return cmd.Name + ": an outbound connection"
	case "MIGRATE", "FAILOVER":
		return cmd.Name + ": an outbound connection"
	case "CLUSTER":
		if sub == "MEET" {
			return "CLUSTER MEET: an outbound connection"
		}
	case "MODULE":
		if sub == "LOAD" || sub == "LOADEX" {
			return "MODULE " + sub + ": code the fixture chooses"
		}
	case "EVAL", "EVAL_RO":
		if len(cmd.Args) > 1 && namesMigrate(cmd.Args[1]) {
			c.scripts[sha1hex(cmd.Args[1])] = true
			return cmd.Name + ": a script calling MIGRATE"
		}
	case "SCRIPT":
		if sub == "LOAD" && len(cmd.Args) > 2 && namesMigrate(cmd.Args[2]) {
			c.scripts[sha1hex(cmd.Args[2])] = true
			return "SCRIPT LOAD: a script calling MIGRATE"
		}
	case "EVALSHA", "EVALSHA_RO":
		if len(cmd.Args) > 1 && c.scripts[strings.ToLower(string(cmd.Args[1]))] {
			return cmd.Name + ": a script withheld before (it calls MIGRATE)"
		}
	case "FUNCTION":
		if sub == "LOAD" && len(cmd.Args) > 2 && namesMigrate(cmd.Args[len(cmd.Args)-1]) {
			c.libraries = true
			return "FUNCTION LOAD: a library calling MIGRATE"
		}
	case "FCALL", "FCALL_RO":
		if c.libraries {
			return cmd.Name + ": a library was withheld before (it calls MIGRATE)"
		}
	}
	return ""
}

// containNames are the commands Contain looks into: the others are sent.
var containNames = []string{"CONFIG", "REPLICAOF", "SLAVEOF", "MIGRATE", "FAILOVER", "CLUSTER", "MODULE",
	"EVAL", "EVAL_RO", "EVALSHA", "EVALSHA_RO", "SCRIPT", "FUNCTION", "FCALL", "FCALL_RO", "MULTI", "EXEC", "DISCARD", "RESET"}

func namesMigrate(body []byte) bool { return bytes.Contains(bytes.ToLower(body), []byte("migrate")) }

func sha1hex(b []byte) string {
	s := sha1.Sum(b)
	return hex.EncodeToString(s[:])
}

// rawWhy withholds bytes the codec cannot frame that name a withheld
// command or setting anywhere: what redis-server makes of them cannot be
// told.
func rawWhy(b []byte) string {
	low := bytes.ToLower(b)
	for _, w := range []string{"config", "replicaof", "slaveof", "migrate", "failover", "cluster", "module"} {
		if bytes.Contains(low, []byte(w)) {
			return "unframed bytes naming " + strings.ToUpper(w)
		}
	}
	return ""
}
