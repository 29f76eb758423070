package redis

import (
	"fmt"
	"strings"

	"github.com/kavach-dev/kavach/launch"
)

// SafetyArgs come after every other argument a Redis build is started with,
// so that they win over a fixture's or a user's: the build listens on the
// loopback interface only, on Kavach's port, runs in its fresh directory in
// the foreground, logs to its output, and persists nothing.
var SafetyArgs = []string{
	"--port", "{port}", "--bind", "127.0.0.1", "--protected-mode", "yes", "--dir", "{dir}",
	"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", "",
}

// behaviourConfig are the configuration directives a fixture may start a
// build with: settings that change the behaviour under test (encodings,
// limits, eviction, timers, expiry, notifications). Network, filesystem,
// module, user, persistence and replication settings are not here.
var behaviourConfig = setOf(
	"hz", "dynamic-hz", "activerehashing", "active-expire-effort",
	"maxmemory", "maxmemory-policy", "maxmemory-samples", "maxmemory-eviction-tenacity", "maxmemory-clients",
	"lfu-log-factor", "lfu-decay-time",
	"lazyfree-lazy-eviction", "lazyfree-lazy-expire", "lazyfree-lazy-server-del", "lazyfree-lazy-user-del", "lazyfree-lazy-user-flush",
	"hash-max-listpack-entries", "hash-max-listpack-value", "hash-max-ziplist-entries", "hash-max-ziplist-value",
	"list-max-listpack-size", "list-max-ziplist-size", "list-compress-depth",
	"set-max-intset-entries", "set-max-listpack-entries", "set-max-listpack-value",
	"zset-max-listpack-entries", "zset-max-listpack-value", "zset-max-ziplist-entries", "zset-max-ziplist-value",
	"hll-sparse-max-bytes", "stream-node-max-bytes", "stream-node-max-entries",
	"activedefrag", "active-defrag-ignore-bytes", "active-defrag-threshold-lower", "active-defrag-threshold-upper",
	"active-defrag-cycle-min", "active-defrag-cycle-max", "active-defrag-max-scan-fields",
	"proto-max-bulk-len", "client-query-buffer-limit", "client-output-buffer-limit", "maxclients", "timeout", "tcp-keepalive",
	"databases", "notify-keyspace-events", "lua-time-limit", "busy-reply-threshold",
	"slowlog-log-slower-than", "slowlog-max-len", "latency-monitor-threshold", "latency-tracking", "latency-tracking-info-percentiles",
	"tracking-table-max-keys", "io-threads", "io-threads-do-reads", "jemalloc-bg-thread",
	"loglevel", "crash-log-enabled", "crash-memcheck-enabled",
	// DEBUG reaches nothing outside the build and its fresh directory, and
	// incidents use it (DEBUG SEGFAULT); MODULE and the protected configs
	// (CONFIG SET dir) do, and stay refused.
	"enable-debug-command",
)

// ownValues are Kavach's own settings (see SafetyArgs): a fixture may name
// them with Kavach's value only (fixtures record "--port {port}").
var ownValues = map[string]string{
	"port": "{port}", "dir": "{dir}", "bind": "127.0.0.1", "protected-mode": "yes",
	"save": "", "appendonly": "no", "daemonize": "no", "logfile": "",
}

// refusedWhy says why a directive is refused, by family, for the message.
func refusedWhy(name string) string {
	switch {
	case name == "bind" || name == "port" || name == "protected-mode" || strings.HasPrefix(name, "tls") ||
		strings.HasPrefix(name, "unixsocket") || name == "bind-source-addr" || name == "tcp-backlog":
		return "a network setting"
	case name == "dir" || name == "dbfilename" || name == "logfile" || name == "include" || name == "pidfile" ||
		name == "appendfilename" || name == "appenddirname" || name == "syslog-enabled" || name == "cluster-config-file":
		return "a filesystem setting"
	case name == "loadmodule" || name == "enable-module-command":
		return "a module setting"
	case name == "requirepass" || name == "user" || name == "aclfile" || strings.HasPrefix(name, "acl") ||
		name == "rename-command" || strings.HasPrefix(name, "enable-"):
		return "a user or access setting"
	case name == "save" || strings.HasPrefix(name, "append") || strings.HasPrefix(name, "rdb") ||
		strings.HasPrefix(name, "aof") || name == "stop-writes-on-bgsave-error":
		return "a persistence setting"
	case name == "replicaof" || name == "slaveof" || strings.HasPrefix(name, "repl") || strings.HasPrefix(name, "replica") ||
		strings.HasPrefix(name, "slave") || strings.HasPrefix(name, "master") || strings.HasPrefix(name, "min-replicas") ||
		strings.HasPrefix(name, "min-slaves") || strings.HasPrefix(name, "cluster"):
		return "a replication or cluster setting"
	case name == "daemonize" || name == "supervised" || name == "oom-score-adj" || name == "oom-score-adj-values" ||
		name == "disable-thp":
		return "a process setting"
	}
	return "not a setting known to change only the behaviour under test"
}

// CheckArgs checks the launch arguments a fixture recorded before a build
// is started with them: each must be a "--name value..." directive whose
// name changes only the behaviour under test (encodings, limits, hz,
// maxmemory-policy...), or one of Kavach's own settings with Kavach's
// value. A configuration file, a network, filesystem, module, user,
// persistence or replication setting is refused with the argument named.
func CheckArgs(args []string) error {
	for i := 0; i < len(args); {
		a := args[i]
		if hasControl(a) {
			return &launch.LaunchRefused{Arg: quoted(a), Why: "it holds a control character"}
		}
		if !strings.HasPrefix(a, "--") || len(a) == 2 {
			return &launch.LaunchRefused{Arg: a, Why: "a configuration file or option that is not a --name value directive"}
		}
		if strings.ContainsAny(a, " \t") {
			return &launch.LaunchRefused{Arg: quoted(a), Why: "a directive and its value in one argument (give them as separate arguments)"}
		}
		name := strings.ToLower(a[2:])
		j := i + 1
		for j < len(args) && !strings.HasPrefix(args[j], "--") {
			if hasControl(args[j]) {
				return &launch.LaunchRefused{Arg: a + " " + quoted(args[j]), Why: "it holds a control character"}
			}
			j++
		}
		values := args[i+1 : j]
		shown := strings.Join(append([]string{a}, quoteAll(values)...), " ")
		if len(values) == 0 {
			// Redis would take the next directive (Kavach's own --port,
			// say) as its value.
			return &launch.LaunchRefused{Arg: a, Why: "a directive with no value"}
		}
		if name == "requirepass" && len(values) == 1 && values[0] == Redacted {
			// The password recording redacted: a replay puts the operator's
			// own back (KAVACH_REDIS_SECRET); the fixture cannot choose it.
		} else if own, ok := ownValues[name]; ok {
			if len(values) != 1 || values[0] != own {
				return &launch.LaunchRefused{Arg: shown, Why: refusedWhy(name) + ", which Kavach sets itself"}
			}
		} else if !behaviourConfig[name] {
			return &launch.LaunchRefused{Arg: shown, Why: refusedWhy(name)}
		}
		i = j
	}
	return nil
}

// hasControl reports a control character (below space, or DEL) in s: Redis
// reads its arguments as configuration lines, where each may end a line,
// separate words or reach a terminal.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// quoted shows an argument with its control characters escaped.
func quoted(s string) string {
	if hasControl(s) || strings.ContainsAny(s, " \"'") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// quoteAll shows values the way a shell would need them: "" for empty.
func quoteAll(values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = v
		if v == "" || strings.ContainsAny(v, " \t\"'") {
			out[i] = fmt.Sprintf("%q", v)
		}
	}
	return out
}

// CheckBuild refuses, before it is started, a build that is a program of
// another kind: an ELF executable that is neither a Redis nor a Valkey
// server (they hold the INFO field redis_version or valkey_version). A
// script is not looked into: it starts what it starts, with Kavach's
// arguments.
func CheckBuild(path string) error {
	return launch.CheckExecutable(path, "a Redis or Valkey server", []string{"redis_version:", "valkey_version:"}, nil)
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
