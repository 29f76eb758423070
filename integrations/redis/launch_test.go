package redis

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/launch"
)

func TestCheckArgs(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--port", "{port}", "--dir", "{dir}"},
		{"--hz", "10", "--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru"},
		{"--HASH-MAX-LISTPACK-ENTRIES", "0", "--list-max-listpack-size", "-2"},
		{"--save", "", "--appendonly", "no", "--bind", "127.0.0.1"},
		{"--client-output-buffer-limit", "pubsub", "32mb", "8mb", "60"},
		{"--enable-debug-command", "yes"},
		{"--requirepass", "<redacted>"},
	} {
		if err := CheckArgs(args); err != nil {
			t.Errorf("CheckArgs(%q) = %v, want allowed", args, err)
		}
	}
	for _, tc := range []struct {
		args []string
		arg  string // the argument the refusal names
		why  string
	}{
		{[]string{"--bind", "0.0.0.0"}, "--bind 0.0.0.0", "network"},
		{[]string{"--hz", "10", "--protected-mode", "no"}, "--protected-mode no", "network"},
		{[]string{"--port", "6379"}, "--port 6379", "network"},
		{[]string{"--unixsocket", "/tmp/r.sock"}, "--unixsocket /tmp/r.sock", "network"},
		{[]string{"--tls-port", "6380"}, "--tls-port 6380", "network"},
		{[]string{"--dir", "/etc"}, "--dir /etc", "filesystem"},
		{[]string{"--dbfilename", "x.rdb"}, "--dbfilename x.rdb", "filesystem"},
		{[]string{"--logfile", "/tmp/x.log"}, "--logfile /tmp/x.log", "filesystem"},
		{[]string{"--include", "/etc/redis/redis.conf"}, "--include /etc/redis/redis.conf", "filesystem"},
		{[]string{"--loadmodule", "/tmp/m.so"}, "--loadmodule /tmp/m.so", "module"},
		{[]string{"--requirepass", "s3cret"}, "--requirepass s3cret", "user"},
		{[]string{"--user", "bob", "on", ">pw", "+@all"}, "--user bob on >pw +@all", "user"},
		{[]string{"--aclfile", "/tmp/users.acl"}, "--aclfile /tmp/users.acl", "user"},
		{[]string{"--rename-command", "CONFIG", ""}, `--rename-command CONFIG ""`, "user"},
		{[]string{"--enable-protected-configs", "yes"}, "--enable-protected-configs yes", "user"},
		{[]string{"--enable-module-command", "yes"}, "--enable-module-command yes", "module"},
		{[]string{"--save", "60", "1"}, "--save 60 1", "persistence"},
		{[]string{"--appendonly", "yes"}, "--appendonly yes", "persistence"},
		{[]string{"--replicaof", "10.0.0.1", "6379"}, "--replicaof 10.0.0.1 6379", "replication"},
		{[]string{"--daemonize", "yes"}, "--daemonize yes", "process"},
		{[]string{"/etc/redis/redis.conf"}, "/etc/redis/redis.conf", "configuration file"},
		{[]string{"-"}, "-", "configuration file"},
		{[]string{"--test-memory", "10"}, "--test-memory 10", "not a setting"},
		{[]string{"--hz", "10\nloadmodule /tmp/m.so"}, `--hz "10\nloadmodule /tmp/m.so"`, "control character"},
		{[]string{"--hz", "10\vx"}, `--hz "10\vx"`, "control character"},
		{[]string{"--loglevel", "\x1b[2Jwarning"}, `--loglevel "\x1b[2Jwarning"`, "control character"},
		{[]string{"--hz\x7f", "10"}, `"--hz\x7f"`, "control character"},
		{[]string{"--maxmemory-policy"}, "--maxmemory-policy", "no value"},
		{[]string{"--hz", "10", "--maxmemory-policy", "--port", "{port}"}, "--maxmemory-policy", "no value"},
		{[]string{"--requirepass S3cret"}, `"--requirepass S3cret"`, "one argument"},
		{[]string{"--hz 10"}, `"--hz 10"`, "one argument"},
	} {
		err := CheckArgs(tc.args)
		var lr *launch.LaunchRefused
		if !errors.As(err, &lr) || lr.Arg != tc.arg || !strings.Contains(lr.Why, tc.why) {
			t.Errorf("CheckArgs(%q) = %v; want %q refused as %s", tc.args, err, tc.arg, tc.why)
		}
	}
}

// FuzzCheckArgs: never panics, and what it allows names only directives of
// the allowlist or Kavach's own with Kavach's value.
func FuzzCheckArgs(f *testing.F) {
	f.Add("--hz\x0010\x00--bind\x000.0.0.0")
	f.Add("--save\x00\x00--port\x00{port}")
	f.Add("x.conf\x00--loadmodule\x00m.so")
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		if CheckArgs(args) != nil {
			return
		}
		for i, a := range args {
			if !strings.HasPrefix(a, "--") {
				if i == 0 {
					t.Fatalf("allowed %q: a first argument that is not a directive", args)
				}
				continue
			}
			name := strings.ToLower(a[2:])
			if own, ok := ownValues[name]; ok {
				if i+1 >= len(args) || args[i+1] != own {
					t.Fatalf("allowed %q: %s with another value than Kavach's", args, a)
				}
			} else if !behaviourConfig[name] {
				t.Fatalf("allowed %q: %s is not in the allowlist", args, a)
			}
		}
	})
}

// TestSafetyArgsWin starts a real server with hostile launch arguments, as
// --trust-fixture-launch would: Kavach's own settings come last and win.
func TestSafetyArgsWin(t *testing.T) {
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	os.Mkdir(elsewhere, 0o755)
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t), Args: []string{
		"--bind", "0.0.0.0", "::", "--protected-mode", "no", "--port", "6379",
		"--dir", elsewhere, "--dbfilename", "stolen.rdb", "--save", "1", "1", "--appendonly", "yes",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	dir := p.(*launch.Spawned).Dir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, want := range map[string]string{
		"bind": "127.0.0.1", "protected-mode": "yes", "dir": dir, "save": "", "appendonly": "no",
		"port": strings.TrimPrefix(p.Addr(), "127.0.0.1:"),
	} {
		v, err := call(ctx, p.Addr(), "CONFIG", "GET", name)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Elems) != 2 || string(v.Elems[1].Str) != want {
			t.Errorf("CONFIG GET %s = %s, want %q", name, v, want)
		}
	}
	// It listens on the loopback interface only: not on any other address
	// of this machine.
	_, port, _ := net.SplitHostPort(p.Addr())
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		ip, _, err := net.ParseCIDR(a.String())
		if err != nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
			continue
		}
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), port), 2*time.Second); err == nil {
			c.Close()
			t.Errorf("the build answers on %s: not loopback only", net.JoinHostPort(ip.String(), port))
		}
	}
	// A write that would persist: nothing lands anywhere.
	if _, err := call(ctx, p.Addr(), "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	for _, d := range []string{elsewhere, dir} {
		if entries, _ := os.ReadDir(d); len(entries) > 0 {
			t.Errorf("%s holds %d files after the build stopped", d, len(entries))
		}
	}
}

// TestProbesAreNoRequests: starting a build and finding its version send
// it no command: the server's command statistics are empty when the first
// request of a replay arrives.
func TestProbesAreNoRequests(t *testing.T) {
	path := redisServer(t)
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if v := (Integration{}).Identify(context.Background(), kavach.Launch{Path: path}); !strings.HasPrefix(v, "redis ") && !strings.HasPrefix(v, "valkey ") {
		t.Errorf("Identify = %q, want redis or valkey and a version", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := call(ctx, p.Addr(), "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(v.Str), "cmdstat_") {
		t.Errorf("the server counted commands before the first request:\n%s", v.Str)
	}
}

func TestParseVersion(t *testing.T) {
	for out, want := range map[string]string{
		"Redis server v=7.0.15 sha=00000000:0 malloc=libc bits=64 build=2189cded9c606fe8\n": "redis 7.0.15",
		"Valkey server v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=1\n":      "valkey 8.0.1",
		"something else": "",
	} {
		if got := parseVersion(out); got != want {
			t.Errorf("parseVersion(%q) = %q, want %q", out, got, want)
		}
	}
}
