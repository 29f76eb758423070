package redis

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kavach-dev/kavach"
)

// FingerprintLaunch allows debug commands on loopback connections
// (--enable-debug-command local), which the probe's DEBUG DIGEST-VALUE
// and DEBUG OBJECT need, unless the recording decided that itself: its
// launch names the directive (then the build keeps what was recorded),
// or it sends DEBUG (then allowing it would change what those requests
// get). A build that does not know the directive (before Redis 7) allows
// DEBUG already (kavach.Fingerprinter).
func (Launcher) FingerprintLaunch(l kavach.Launch, requests func(yield func([]byte) bool)) (kavach.Launch, string) {
	for _, a := range l.Args {
		if strings.EqualFold(a, "--enable-debug-command") {
			return l, ""
		}
	}
	for req := range requests {
		if name, ok := peekName(req); ok && nameIn(name, "DEBUG") {
			return l, "the recording sends DEBUG and its launch does not allow it: allowing it for the probe would change those requests' answers"
		}
	}
	if !knowsDirective(l.Path, "enable-debug-command") {
		return l, ""
	}
	l.Args = append(slices.Clone(l.Args), "--enable-debug-command", "local")
	return l, ""
}

// knowsDirective reports whether the executable at path holds the name of
// a configuration directive (its config table does), read once per
// executable (path, size, time of change).
func knowsDirective(path, name string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	key := fmt.Sprintf("%s\x00%d\x00%d\x00%s", path, st.Size(), st.ModTime().UnixNano(), name)
	if v, ok := directives.Load(key); ok {
		return v.(bool)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	known := bytes.Contains(b, []byte("\x00"+name+"\x00"))
	directives.Store(key, known)
	return known
}

var directives sync.Map // knowsDirective's answers

// NewProbe returns a probe of the build at addr (kavach.Fingerprinter).
func (Launcher) NewProbe(addr string, timeout time.Duration) kavach.Probe {
	return &probe{addr: addr, timeout: timeout, dbs: map[uint64]string{}, db: "0"}
}

// probe fingerprints keys with requests that neither change them nor
// count as an access: DEBUG DIGEST-VALUE (type and value, found in the
// keyspace without a lookup, so nothing expires), DEBUG OBJECT (encoding
// and the access clock, LRU or LFU, also without a lookup) and
// PEXPIRETIME (a lookup that does not touch the access clock; it counts
// as a keyspace hit in INFO, which every replay after the failure shows
// alike). A request whose keys are unknown gets DEBUG DIGEST, the whole
// keyspace.
type probe struct {
	addr    string
	timeout time.Duration
	nc      net.Conn
	r       *bufio.Reader
	dbs     map[uint64]string // each connection's SELECTed database
	db      string            // the probe's own
	noTime  bool              // PEXPIRETIME unknown (before 7.0): PTTL instead
}

func (p *probe) Sent(conn uint64, request []byte) {
	name, ok := peekName(request)
	if ok && !nameIn(name, "SELECT", "RESET") {
		return
	}
	c, err := ParseCommand(request)
	if err != nil {
		return
	}
	switch {
	case c.Name == "SELECT" && len(c.Args) == 2:
		if _, err := strconv.Atoi(string(c.Args[1])); err == nil {
			p.dbs[conn] = string(c.Args[1])
		}
	case c.Name == "RESET":
		delete(p.dbs, conn)
	}
}

func (p *probe) Fingerprint(conn uint64, keys []string) (map[string]string, error) {
	if p.nc == nil {
		nc, err := net.DialTimeout("tcp", p.addr, p.timeout)
		if err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		p.nc, p.r = nc, bufio.NewReader(nc)
	}
	p.nc.SetDeadline(time.Now().Add(p.timeout))
	fp := map[string]string{}
	if keys == nil {
		v, err := p.ask("DEBUG", "DIGEST")
		if err != nil {
			return nil, err
		}
		fp["* digest"] = string(v.Str)
		return fp, nil
	}
	db := p.dbs[conn]
	if db == "" {
		db = "0"
	}
	if db != p.db {
		if _, err := p.ask("SELECT", db); err != nil {
			return nil, err
		}
		p.db = db
	}
	fp["db"] = db // never empty: an empty fingerprint would read back as none
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	if len(keys) == 0 {
		return fp, nil
	}
	v, err := p.ask(append([]string{"DEBUG", "DIGEST-VALUE"}, keys...)...)
	if err != nil {
		return nil, err
	}
	if len(v.Elems) != len(keys) {
		return nil, fmt.Errorf("probe: DEBUG DIGEST-VALUE gave %d digests for %d keys", len(v.Elems), len(keys))
	}
	for i, k := range keys {
		d := string(v.Elems[i].Str)
		if strings.Trim(d, "0") == "" {
			fp[k+" digest"] = "none" // no such key
			continue
		}
		fp[k+" digest"] = d
		if o, err := p.ask("DEBUG", "OBJECT", k); err == nil {
			enc, access := debugObject(string(o.Str))
			fp[k+" encoding"], fp[k+" access"] = enc, access
		} else if !errors.Is(err, errReply) {
			return nil, err
		}
		at, err := p.expireTime(k)
		if err != nil {
			return nil, err
		}
		fp[k+" expire"] = at
	}
	return fp, nil
}

// expireTime is a key's expiry as an absolute time (PEXPIRETIME), or its
// time to live (PTTL) on a build that lacks it, the clock being the same
// virtual one on both builds at a step.
func (p *probe) expireTime(k string) (string, error) {
	if !p.noTime {
		v, err := p.ask("PEXPIRETIME", k)
		if err == nil {
			return strconv.FormatInt(v.Int, 10), nil
		}
		if !errors.Is(err, errReply) {
			return "", err
		}
		p.noTime = true
	}
	v, err := p.ask("PTTL", k)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(v.Int, 10), nil
}

// debugObject reads DEBUG OBJECT's answer ("Value at:0x... refcount:1
// encoding:embstr serializedlength:4 lru:8410 lru_seconds_idle:3"):
// the encoding, and the access clock (lru: the last access's LRU clock,
// or under an LFU policy its decay time and counter). The address and
// reference count say nothing about the state a request reads.
func debugObject(s string) (encoding, access string) {
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, ":")
		switch k {
		case "encoding":
			encoding = v
		case "lru":
			access = v
		}
	}
	return encoding, access
}

// errReply is an error reply from the build (not a broken connection).
var errReply = errors.New("error reply")

// ask sends one command on the probe's connection and reads its reply.
func (p *probe) ask(args ...string) (Value, error) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	if _, err := p.nc.Write(AppendCommand(nil, b...)); err != nil {
		return Value{}, fmt.Errorf("probe: %w", err)
	}
	v, err := readReply(p.r)
	if err != nil {
		return Value{}, fmt.Errorf("probe: %s: %w", args[0], err)
	}
	if v.Kind == KindError || v.Kind == KindBulkError {
		return v, fmt.Errorf("probe: %s %s: %s: %w", args[0], strings.Join(args[1:min(2, len(args))], " "), v.Str, errReply)
	}
	return v, nil
}

func (p *probe) Close() error {
	if p.nc == nil {
		return nil
	}
	return p.nc.Close()
}

var _ kavach.Fingerprinter = Launcher{}
