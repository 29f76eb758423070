package redis

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Normalize turns a reply into the tree replays compare (docs/redis.md,
// "What replays compare"):
//
//   - strings (simple, bulk, verbatim, big numbers, doubles as written)
//     are strings; integers int64; booleans bool; nulls nil; errors a
//     map {"error": text}; arrays, sets and pushes lists; maps with
//     string keys maps, others lists of [key, value] pairs.
//   - Attributes are dropped: they are metadata, not the answer.
//   - Replies whose order comes from a hash table (sets, maps, and the
//     replies of SMEMBERS, KEYS, HKEYS, HGETALL, SCAN, PUBSUB CHANNELS, ...)
//     are sorted: Redis seeds its hash function at random in every
//     process. The commands the server itself tips as
//     nondeterministic_output_order, whose replies nest hash-ordered
//     parts, are order-free at every level: COMMAND, COMMAND INFO and
//     COMMAND DOCS become a digest per command (commandDigests),
//     COMMAND LIST is sorted, MODULE LIST and FUNCTION LIST are sorted
//     at every level.
//   - Replies that differ between runs by design are replaced by a
//     placeholder naming what was there: INFO, CLIENT LIST and INFO,
//     MEMORY, DEBUG, SLOWLOG, LATENCY, LOLWUT; client ids (CLIENT ID, the
//     id in HELLO's reply: they count the server's connections, readiness
//     probes included) and the version in HELLO's reply (the build's);
//     the members returned by
//     RANDOMKEY, SRANDMEMBER, SPOP, HRANDFIELD and ZRANDMEMBER (their
//     count is kept); the microseconds of TIME; the data file a replica
//     is sent (SYNC, PSYNC) and PSYNC's +FULLRESYNC line.
//
// Everything else is compared exactly.
func (Integration) Normalize(request, response []byte) any {
	if out, ok := normalizeRaw(request, response); ok {
		return out
	}
	v, err := Parse(response)
	if err != nil {
		return map[string]any{"unparsable": string(response)}
	}
	if v.Kind == KindError || v.Kind == KindBulkError {
		return tree(v)
	}
	cmd, _ := ParseCommand(request)
	sub := ""
	if len(cmd.Args) > 1 {
		sub = strings.ToUpper(string(cmd.Args[1]))
	}
	switch cmd.Name {
	case "INFO", "LOLWUT", "SLOWLOG", "LATENCY", "MEMORY", "DEBUG":
		return "<" + strings.ToLower(cmd.Name) + ">"
	case "CLIENT":
		switch sub {
		case "LIST", "INFO":
			return "<client " + strings.ToLower(sub) + ">"
		case "ID":
			return "<client id>"
		}
	case "HELLO":
		// The connection's id counts every connection the server saw,
		// readiness probes included; the version is the build's, which a
		// fix may raise (a release), not an answer of the connection's.
		hide := map[string]string{"id": "<client id>", "version": "<version>"}
		switch t := tree(v).(type) {
		case map[string]any:
			for k, p := range hide {
				if _, ok := t[k]; ok {
					t[k] = p
				}
			}
			return t
		case []any:
			for i := 0; i+1 < len(t); i += 2 {
				if k, ok := t[i].(string); ok && hide[k] != "" {
					t[i+1] = hide[k]
				}
			}
			return t
		}
	case "TIME":
		// Seconds follow the virtual clock exactly; microseconds depend on
		// when the service ran the command after the proxy stamped it.
		if t, ok := tree(v).([]any); ok && len(t) == 2 {
			return []any{t[0], "<microseconds>"}
		}
	case "RANDOMKEY", "SRANDMEMBER", "SPOP", "HRANDFIELD", "ZRANDMEMBER":
		return random(tree(v))
	case "SMEMBERS", "SINTER", "SUNION", "SDIFF", "KEYS", "HKEYS", "HVALS":
		return sorted(tree(v))
	case "COMMAND":
		// COMMAND, COMMAND LIST, DOCS and INFO answer in the order of the
		// server's command table, a hash table, nested (subcommands) too.
		switch sub {
		case "LIST":
			return sorted(tree(v))
		case "", "DOCS", "INFO":
			if d := commandDigests(v, sub == "DOCS"); d != nil {
				return d
			}
			return deepSorted(tree(v))
		}
	case "MODULE", "FUNCTION":
		if sub == "LIST" {
			return deepSorted(tree(v))
		}
	case "PUBSUB":
		if sub == "CHANNELS" || sub == "SHARDCHANNELS" {
			return sorted(tree(v))
		}
	case "HGETALL", "CONFIG":
		if v.Kind == KindArray {
			return sortedPairs(tree(v))
		}
	case "SCAN", "SSCAN", "HSCAN", "ZSCAN":
		t := tree(v)
		if l, ok := t.([]any); ok && len(l) == 2 {
			if cmd.Name == "HSCAN" || cmd.Name == "ZSCAN" {
				return []any{l[0], sortedPairs(l[1])}
			}
			return []any{l[0], sorted(l[1])}
		}
		return t
	}
	return tree(v)
}

// normalizeRaw is Normalize for the replies it reads without parsing
// them whole: COMMAND's (a digest per command, read from the bytes), the
// data file a replica is sent (SYNC, PSYNC: its replication id is drawn
// at random, its memory figures vary, and its keys come in the order of
// the build's hash tables, seeded at random), and PSYNC's +FULLRESYNC
// line (the same replication id).
func normalizeRaw(request, response []byte) (any, bool) {
	name, ok := peekName(request)
	if ok && bytes.EqualFold(name, []byte("COMMAND")) {
		if d := rawCommandDigests(request, response); d != nil {
			return d, true
		}
	}
	if n, ok := rdbTransfer(response); ok && n == len(response) {
		return "<data file>", true
	}
	if ok && bytes.EqualFold(name, []byte("PSYNC")) && bytes.HasPrefix(response, []byte("+FULLRESYNC ")) {
		return "<fullresync>", true
	}
	return nil, false
}

// tree converts a parsed value into the comparison tree.
func tree(v Value) any {
	switch v.Kind {
	case KindInt:
		return v.Int
	case KindBool:
		return v.Bool
	case KindNull:
		return nil
	case KindError, KindBulkError:
		return map[string]any{"error": string(v.Str)}
	case KindArray, KindPush:
		if v.Null {
			return nil
		}
		l := make([]any, len(v.Elems))
		for i, e := range v.Elems {
			l[i] = tree(e)
		}
		return l
	case KindSet:
		l := make([]any, len(v.Elems))
		for i, e := range v.Elems {
			l[i] = tree(e)
		}
		return sorted(l)
	case KindMap:
		m := map[string]any{}
		var pairs []any
		for i := 0; i+1 < len(v.Elems); i += 2 {
			k, val := tree(v.Elems[i]), tree(v.Elems[i+1])
			pairs = append(pairs, []any{k, val})
			if ks, ok := k.(string); ok {
				m[ks] = val
			}
		}
		if len(m) == len(pairs) {
			return m
		}
		return sortPairs(pairs)
	}
	if v.Null {
		return nil
	}
	return string(v.Str)
}

// sorted sorts a list by each element's JSON form.
func sorted(t any) any {
	l, ok := t.([]any)
	if !ok {
		return t
	}
	type keyed struct {
		key string
		v   any
	}
	k := make([]keyed, len(l))
	for i, e := range l {
		k[i] = keyed{key(e), e} // each element's JSON once, not per comparison
	}
	sort.SliceStable(k, func(i, j int) bool { return k[i].key < k[j].key })
	out := make([]any, len(l))
	for i := range k {
		out[i] = k[i].v
	}
	return out
}

// commandDigests is a COMMAND, COMMAND INFO or COMMAND DOCS reply as a
// map from each command's name to a digest of its entry, the entry's
// lists hashed as multisets at every level (orderFreeHash): equal across
// processes, and a difference names the command whose metadata changed.
// It never builds the reply's tree, which for COMMAND DOCS (about 200 KB)
// would cost more than the rest of a replay. nil when the reply is not of
// that shape.
func commandDigests(v Value, docs bool) map[string]any {
	out := map[string]any{}
	switch {
	case docs && (v.Kind == KindArray || v.Kind == KindMap) && len(v.Elems)%2 == 0:
		for i := 0; i < len(v.Elems); i += 2 {
			out[string(v.Elems[i].Str)] = fmt.Sprintf("<digest %016x>", orderFreeHash(v.Elems[i+1]))
		}
	case !docs && v.Kind == KindArray:
		for _, e := range v.Elems {
			if e.Null || len(e.Elems) == 0 {
				continue // COMMAND INFO of an unknown name: null, kept out
			}
			out[string(e.Elems[0].Str)] = fmt.Sprintf("<digest %016x>", orderFreeHash(e))
		}
	default:
		return nil
	}
	return out
}

// entryHashes keeps the digest of each COMMAND reply entry met, by its
// bytes: a recording made by redis-cli sends COMMAND DOCS first, so every
// variant's replay meets a 170 KB reply, on both builds. The entries
// come in another order in each process (the build's command table is
// hashed with a random seed), so the reply's bytes differ between two
// replays, but most entries' bytes do not; finding an entry's end and
// looking it up costs a fraction of digesting it (TestSiblingCommands:
// 1.6 s of the test's 12 s of processor time went to digesting).
var entryHashes struct {
	sync.Mutex
	m map[string]uint64
}

// maxEntryHashes bounds entryHashes: past it, it starts again empty
// (four builds' worth of COMMAND DOCS and COMMAND INFO entries).
const maxEntryHashes = 4 * 2 * 256

// entryHash is rawHash of the value at p, remembered by its bytes
// (entryHashes).
func entryHash(data []byte, p int) (h uint64, end int, ok bool) {
	end, ok = rawSkip(data, p, 0)
	if !ok {
		return 0, 0, false
	}
	entry := data[p:end]
	entryHashes.Lock()
	h, found := entryHashes.m[string(entry)]
	entryHashes.Unlock()
	if found {
		return h, end, true
	}
	if h, end, ok = rawHash(data, p); !ok {
		return 0, 0, false
	}
	entryHashes.Lock()
	if entryHashes.m == nil || len(entryHashes.m) >= maxEntryHashes {
		entryHashes.m = map[string]uint64{}
	}
	entryHashes.m[string(entry)] = h
	entryHashes.Unlock()
	return h, end, true
}

// rawSkip is where the RESP value at p ends, as rawHash reads it, without
// hashing it; depth bounds the nesting (MaxDepth).
func rawSkip(data []byte, p, depth int) (end int, ok bool) {
	if p >= len(data) || depth > MaxDepth {
		return 0, false
	}
	switch data[p] {
	case '$', '!', '=':
		n, q, ok := rawHeader(data, p)
		if !ok || n >= 0 && q+n+2 > len(data) {
			return 0, false
		}
		if n < 0 {
			return q, true
		}
		return q + n + 2, true
	case '+', '-', ':', ',', '(', '#', '_':
		nl := bytes.IndexByte(data[p:], '\n')
		if nl < 1 || data[p+nl-1] != '\r' {
			return 0, false
		}
		return p + nl + 1, true
	case '*', '%', '~', '>':
		n, q, ok := rawHeader(data, p)
		if !ok {
			return 0, false
		}
		if data[p] == '%' {
			n *= 2
		}
		for range max(n, 0) {
			if q, ok = rawSkip(data, q, depth+1); !ok {
				return 0, false
			}
		}
		return q, true
	}
	return 0, false
}

// rawCommandDigests is commandDigests read straight from the reply's
// bytes, without parsing it (COMMAND DOCS is about 200 KB, and every
// replay and variant meets it): nil when the request is no COMMAND,
// COMMAND INFO or COMMAND DOCS, or the reply is of another shape (an
// error, attributes), which Normalize then parses.
func rawCommandDigests(request, response []byte) map[string]any {
	c, err := ParseCommand(request)
	if err != nil || c.Name != "COMMAND" {
		return nil
	}
	docs := false
	if len(c.Args) > 1 {
		switch strings.ToUpper(string(c.Args[1])) {
		case "DOCS":
			docs = true
		case "INFO":
		default:
			return nil
		}
	}
	if len(response) == 0 || (response[0] != '*' && !(docs && response[0] == '%')) {
		return nil
	}
	count, p, ok := rawHeader(response, 0)
	if !ok || count < 0 {
		return nil
	}
	if response[0] == '%' {
		count *= 2
	}
	out := map[string]any{}
	for i := 0; i < count; i++ {
		var name []byte
		if docs {
			if i%2 == 0 {
				if name, p, ok = rawString(response, p); !ok {
					return nil
				}
				i++
			}
		} else {
			if p >= len(response) || response[p] != '*' && response[p] != '_' {
				return nil
			}
			n, q, ok := rawHeader(response, p)
			if !ok {
				return nil
			}
			if response[p] == '_' || n < 0 {
				p = q
				continue // an unknown name's null
			}
			if name, _, ok = rawString(response, q); !ok {
				return nil
			}
		}
		h, end, ok := entryHash(response, p)
		if !ok {
			return nil
		}
		out[string(name)] = fmt.Sprintf("<digest %016x>", h)
		p = end
	}
	if p != len(response) {
		return nil
	}
	return out
}

// rawHeader reads the count of the aggregate (or the length of the bulk
// string) at p: -1 for a null; and where its header ends.
func rawHeader(data []byte, p int) (n, end int, ok bool) {
	nl := bytes.IndexByte(data[p:], '\n')
	if nl < 2 || data[p+nl-1] != '\r' {
		return 0, 0, false
	}
	n, ok = smallInt(data[p+1 : p+nl-1])
	if !ok || n < -1 || n > MaxElems {
		return 0, 0, false
	}
	return n, p + nl + 1, true
}

// smallInt reads a decimal integer of at most 18 digits, signed, as
// strconv.Atoi would, without a string: COMMAND DOCS has tens of
// thousands of headers, read in every replay.
func smallInt(b []byte) (int, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg, b = b[0] == '-', b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// rawString reads a bulk or simple string at p.
func rawString(data []byte, p int) (s []byte, end int, ok bool) {
	if p >= len(data) {
		return nil, 0, false
	}
	switch data[p] {
	case '$':
		n, q, ok := rawHeader(data, p)
		if !ok || n < 0 || q+n+2 > len(data) || data[q+n] != '\r' || data[q+n+1] != '\n' {
			return nil, 0, false
		}
		return data[q : q+n], q + n + 2, true
	case '+':
		nl := bytes.IndexByte(data[p:], '\n')
		if nl < 1 || data[p+nl-1] != '\r' {
			return nil, 0, false
		}
		return data[p+1 : p+nl-1], p + nl + 1, true
	}
	return nil, 0, false
}

// rawHash hashes the RESP value at p as orderFreeHash hashes a parsed one
// (strings of every kind alike, integers, nulls, and aggregates as
// multisets), in one pass over the bytes; ok is false for what it does not
// read (attributes, a malformed frame).
func rawHash(data []byte, p int) (h uint64, end int, ok bool) {
	if p >= len(data) {
		return 0, 0, false
	}
	// FNV-1a inline (hash/fnv's, byte for byte, without an allocation per
	// value: COMMAND DOCS has tens of thousands).
	f := uint64(fnvOffset)
	switch t := data[p]; t {
	case '$', '!', '=':
		n, q, ok := rawHeader(data, p)
		if !ok || q+max(n, 0)+2 > len(data) && n >= 0 {
			return 0, 0, false
		}
		if n < 0 {
			return fnvByte(f, 'n'), q, true
		}
		if t == '!' {
			f = fnvByte(f, 'e')
		} else {
			f = fnvByte(f, 's')
		}
		return fnvBytes(f, data[q:q+n]), q + n + 2, true
	case '+', '-', ':', ',', '(', '#', '_':
		nl := bytes.IndexByte(data[p:], '\n')
		if nl < 1 || data[p+nl-1] != '\r' {
			return 0, 0, false
		}
		switch t {
		case '+', ',', '(':
			f = fnvByte(f, 's')
		case '_':
			f = fnvByte(f, 'n')
		default:
			f = fnvByte(f, t)
		}
		return fnvBytes(f, data[p+1:p+nl-1]), p + nl + 1, true
	case '*', '%', '~', '>':
		n, q, ok := rawHeader(data, p)
		if !ok {
			return 0, 0, false
		}
		if n < 0 {
			return fnvByte(f, 'n'), q, true
		}
		if t == '%' {
			n *= 2
			f = fnvByte(f, 'm')
		} else {
			f = fnvByte(f, 'l')
		}
		var small [16]uint64
		hs := small[:0]
		if n > len(small) {
			hs = make([]uint64, 0, n)
		}
		for range n {
			var x uint64
			if x, q, ok = rawHash(data, q); !ok {
				return 0, 0, false
			}
			hs = append(hs, x)
		}
		slices.Sort(hs)
		var b [8]byte
		for _, x := range hs {
			binary.LittleEndian.PutUint64(b[:], x)
			f = fnvBytes(f, b[:])
		}
		return f, q, true
	}
	return 0, 0, false
}

// FNV-1a's 64-bit offset basis and prime (hash/fnv's).
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvByte(h uint64, c byte) uint64 { return (h ^ uint64(c)) * fnvPrime }

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h
}

// orderFreeHash hashes a parsed value with every aggregate's elements
// taken as a multiset: the same whatever the order at any level.
func orderFreeHash(v Value) uint64 {
	h := fnv.New64a()
	var b [8]byte
	h.Write([]byte{byte(v.Kind)})
	if len(v.Elems) > 0 || v.Kind == KindArray || v.Kind == KindMap || v.Kind == KindSet || v.Kind == KindPush {
		hs := make([]uint64, len(v.Elems))
		for i, e := range v.Elems {
			hs[i] = orderFreeHash(e)
		}
		slices.Sort(hs)
		for _, x := range hs {
			binary.LittleEndian.PutUint64(b[:], x)
			h.Write(b[:])
		}
		return h.Sum64()
	}
	h.Write(v.Str)
	binary.LittleEndian.PutUint64(b[:], uint64(v.Int))
	h.Write(b[:])
	if v.Null {
		h.Write([]byte{'n'})
	}
	if v.Bool {
		h.Write([]byte{'t'})
	}
	return h.Sum64()
}

// deepSorted sorts every list in a tree, innermost first, by a hash of
// each element (itself made of its parts' hashes, so the work is one walk
// of the tree): two trees that differ only in the order of some lists'
// elements, at any depth, become equal. The order is canonical, not
// alphabetical; equal elements hash equal, and distinct ones colliding
// in 64 bits keep their order (stable).
func deepSorted(t any) any {
	v, _ := deepSortedHash(t)
	return v
}

func deepSortedHash(t any) (any, uint64) {
	h := fnv.New64a()
	var b [8]byte
	switch x := t.(type) {
	case []any:
		type hashed struct {
			h uint64
			v any
		}
		l := make([]hashed, len(x))
		for i, e := range x {
			l[i].v, l[i].h = deepSortedHash(e)
		}
		sort.SliceStable(l, func(i, j int) bool { return l[i].h < l[j].h })
		out := make([]any, len(l))
		h.Write([]byte{'['})
		for i, e := range l {
			out[i] = e.v
			binary.LittleEndian.PutUint64(b[:], e.h)
			h.Write(b[:])
		}
		return out, h.Sum64()
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		m := make(map[string]any, len(x))
		h.Write([]byte{'{'})
		for _, k := range keys {
			v, vh := deepSortedHash(x[k])
			m[k] = v
			h.Write([]byte(k))
			binary.LittleEndian.PutUint64(b[:], vh)
			h.Write(b[:])
		}
		return m, h.Sum64()
	}
	switch x := t.(type) {
	case string:
		h.Write([]byte{'s'})
		h.Write([]byte(x))
	case int64:
		binary.LittleEndian.PutUint64(b[:], uint64(x))
		h.Write([]byte{'i'})
		h.Write(b[:])
	case nil:
		h.Write([]byte{'n'})
	default:
		fmt.Fprintf(h, "%T:%v", t, t)
	}
	return t, h.Sum64()
}

// sortedPairs sorts a flat [k1, v1, k2, v2, ...] list by pair.
func sortedPairs(t any) any {
	l, ok := t.([]any)
	if !ok || len(l)%2 != 0 {
		return t
	}
	var pairs []any
	for i := 0; i < len(l); i += 2 {
		pairs = append(pairs, []any{l[i], l[i+1]})
	}
	pairs = sortPairs(pairs)
	flat := make([]any, 0, len(l))
	for _, p := range pairs {
		flat = append(flat, p.([]any)...)
	}
	return flat
}

func sortPairs(pairs []any) []any {
	sort.SliceStable(pairs, func(i, j int) bool { return key(pairs[i]) < key(pairs[j]) })
	return pairs
}

func key(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// random keeps the shape of a random reply and hides its members.
func random(t any) any {
	switch x := t.(type) {
	case nil:
		return nil
	case []any:
		l := make([]any, len(x))
		for i := range l {
			l[i] = "<random>"
		}
		return l
	case map[string]any:
		return t // an error
	}
	return "<random>"
}

// Settle asks for a turn of Redis's timer after the virtual clock moved
// into another second (Redis caches its LRU clock and its Unix time, at
// one-second resolution, and refreshes them only in that timer, so without
// a turn a key created right after a jump would carry the old second:
// OBJECT IDLETIME off by the jump), and after any move while a client is
// blocked (its timeout fires in that timer, or just before sleeping).
func (Integration) Settle(from, to time.Time, blocked bool) bool {
	if from.Equal(to) {
		return false
	}
	return blocked || from.Unix() != to.Unix()
}
