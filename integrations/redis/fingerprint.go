package redis

import (
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
	"github.com/kavach-dev/kavach/launch"
)

// FingerprintLaunch allows debug commands on loopback connections
// (--enable-debug-command local), which the probe's DEBUG DIGEST-VALUE
// and DEBUG OBJECT need, unless the recording decided that itself: its
// launch names the directive (then the build keeps what was recorded),
// or it sends DEBUG (then allowing it would change what those requests
// get). A build that does not know the directive (before Redis 7) allows
// DEBUG already (kavach.Fingerprinting).
func (Integration) FingerprintLaunch(l kavach.Launch, requests func(yield func([]byte) bool)) (kavach.Launch, string) {
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

// NewProbe returns a probe of the build at addr (kavach.Fingerprinting).
func (Integration) NewProbe(addr string, timeout time.Duration) kavach.Probe {
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
	buf     []byte            // read from nc, not yet a whole reply
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
	fp, err := p.fingerprint(conn, keys)
	if err != nil && !errors.Is(err, errReply) && p.nc != nil {
		// The connection is in an unknown state (a reply half read): the
		// next fingerprint starts on a new one.
		p.nc.Close()
		p.nc, p.buf, p.db = nil, nil, "0"
	}
	return fp, err
}

func (p *probe) fingerprint(conn uint64, keys []string) (map[string]string, error) {
	if p.nc == nil {
		nc, err := launch.DialTimeout(p.addr, p.timeout)
		if err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		p.nc = nc
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
	fp["db"] = db // never empty: an empty fingerprint would read back as none
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	// One round trip: the database, every key's digest, then each key's
	// object and expiry (a missing key's errors are not looked at).
	var batch [][]string
	if db != p.db {
		batch = append(batch, []string{"SELECT", db})
	}
	if len(keys) > 0 {
		batch = append(batch, append([]string{"DEBUG", "DIGEST-VALUE"}, keys...))
		expire := "PEXPIRETIME"
		if p.noTime {
			expire = "PTTL"
		}
		for _, k := range keys {
			batch = append(batch, []string{"DEBUG", "OBJECT", k}, []string{expire, k})
		}
	}
	replies, err := p.askAll(batch)
	if err != nil {
		return nil, err
	}
	if db != p.db {
		if err := replyErr(batch[0], replies[0]); err != nil {
			return nil, err
		}
		p.db, batch, replies = db, batch[1:], replies[1:]
	}
	if len(keys) == 0 {
		return fp, nil
	}
	digests := replies[0]
	if err := replyErr(batch[0], digests); err != nil {
		return nil, err
	}
	if len(digests.Elems) != len(keys) {
		return nil, fmt.Errorf("probe: DEBUG DIGEST-VALUE gave %d digests for %d keys", len(digests.Elems), len(keys))
	}
	for i, k := range keys {
		d := string(digests.Elems[i].Str)
		if strings.Trim(d, "0") == "" {
			fp[k+" digest"] = "none" // no such key
			continue
		}
		fp[k+" digest"] = d
		if o := replies[1+2*i]; replyErr(nil, o) == nil {
			fp[k+" encoding"], fp[k+" access"] = debugObject(string(o.Str))
		}
		e := replies[2+2*i]
		if replyErr(nil, e) != nil {
			// A build before 7.0 has no PEXPIRETIME: its time to live
			// instead, the clock being the same virtual one on both builds.
			p.noTime = true
			if e, err = p.ask("PTTL", k); err != nil {
				return nil, err
			}
		}
		fp[k+" expire"] = strconv.FormatInt(e.Int, 10)
	}
	return fp, nil
}

// askAll sends commands in one write and reads their replies in order.
func (p *probe) askAll(cmds [][]string) ([]Value, error) {
	var out []byte
	for _, args := range cmds {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		out = AppendCommand(out, b...)
	}
	if _, err := p.nc.Write(out); err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	replies := make([]Value, len(cmds))
	for i := range cmds {
		v, err := p.next()
		if err != nil {
			return nil, fmt.Errorf("probe: %s: %w", cmds[i][0], err)
		}
		replies[i] = v
	}
	return replies, nil
}

// next reads the next whole reply, keeping what follows it.
func (p *probe) next() (Value, error) {
	chunk := make([]byte, 16<<10)
	for {
		if m, err := Split(p.buf); err != nil {
			return Value{}, err
		} else if m > 0 {
			v, err := Parse(p.buf[:m])
			p.buf = p.buf[m:]
			return v, err
		}
		n, err := p.nc.Read(chunk)
		p.buf = append(p.buf, chunk[:n]...)
		if err != nil && n == 0 {
			return Value{}, err
		}
	}
}

// replyErr is an error reply as an error (errReply), naming the command.
func replyErr(cmd []string, v Value) error {
	if v.Kind != KindError && v.Kind != KindBulkError {
		return nil
	}
	return fmt.Errorf("probe: %s: %s: %w", strings.Join(cmd[:min(2, len(cmd))], " "), v.Str, errReply)
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
	r, err := p.askAll([][]string{args})
	if err != nil {
		return Value{}, err
	}
	return r[0], replyErr(args, r[0])
}

func (p *probe) Close() error {
	if p.nc == nil {
		return nil
	}
	return p.nc.Close()
}

// FingerprintContent reports whether a fingerprint field is a key's
// content ("KEY digest", "* digest": type and value), not its access
// clock or encoding (kavach.Fingerprinting.Content).
func FingerprintContent(field string) bool { return strings.HasSuffix(field, " digest") }
