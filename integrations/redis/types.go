package redis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kavach-dev/kavach"
)

// Learned is what Learn asks the old build: each command's arguments
// (COMMAND DOCS), where its keys are (COMMAND INFO), and the types of key
// the build has, each with a write that makes one (TYPE).
type Learned struct {
	Args Schema
	Keys map[string]KeyRange
	// Specs are each command's key specs (COMMAND INFO, Redis 7 on), by
	// name, a subcommand's as "XINFO|STREAM": they place the keys of the
	// commands Keys cannot (EVAL's numkeys, XREAD's STREAMS). A command
	// with none (a build before Redis 7) is placed by Keys.
	Specs map[string][]KeySpec
	Types []TypeWrite
	// Commands are the commands asked about that the build has (COMMAND
	// INFO answered them): those of the fixture and the other members of
	// their families (families.go).
	Commands map[string]bool
	// Derived are the families derived from COMMAND DOCS (derive.go):
	// for a command of the fixture, the other commands of its group with
	// the same grammar, and the group.
	Derived map[string]DerivedFamily
}

// KeyRange is where a command's keys are, as COMMAND INFO gives it from
// the command's key specs: the first and last key's argument positions
// (1 is the first argument after the name; a negative last counts from
// the end, -1 being the last argument) and the step between keys. First
// is 0 for a command without keys, and for one whose keys the server
// finds by reading its arguments (EVAL, XREAD, ZUNIONSTORE's sources).
type KeyRange struct{ First, Last, Step int }

// KeySpec is one key spec of a command, as COMMAND INFO gives it: where
// the search for keys begins, and how the keys are found from there.
// The search begins at argument Index (0 is the command's name), or,
// with a Keyword, at the argument after the first one equal to it,
// looked for from StartFrom on (a negative StartFrom counts from the end
// and looks backwards). From there the keys are a range (LastKey: 0 is
// one key, a negative one counts from the end, or with Limit, a 1/Limit
// share of what is left) or KeyNum keys, their count the argument
// KeyNumIdx after the beginning and the first of them FirstKey after it;
// KeyStep apart either way. Unknown is a spec the server could not say
// (the command reads its arguments itself); NotKey one that names
// something other than a key.
type KeySpec struct {
	Index             int
	Keyword           string
	StartFrom         int
	KeyNum            bool
	LastKey, Limit    int
	KeyNumIdx         int
	FirstKey, KeyStep int
	Unknown, NotKey   bool
	Incomplete        bool
}

// TypeWrite is a type of key the build has, as TYPE names it, and a
// write that makes a key of that type: the command, with the key as
// its first argument.
type TypeWrite struct {
	Type  string
	Write []string
}

// typeWrites are writes of realistic content, one for each kind of value
// Redis keeps. Which type each makes is the build's answer to TYPE, asked
// when learning: a write the build does not know is left out, and two
// writes making one type (a geo set is a sorted set) give it once.
var typeWrites = [][]string{
	{"SET", "", "hello world"},
	{"RPUSH", "", "alpha", "beta", "gamma"},
	{"SADD", "", "alpha", "beta", "gamma"},
	{"ZADD", "", "1", "alpha", "2", "beta", "3", "gamma"},
	{"HSET", "", "name", "alpha", "count", "3"},
	{"XADD", "", "1-1", "name", "alpha"},
	{"GEOADD", "", "13.361389", "38.115556", "Palermo"},
	{"PFADD", "", "alpha", "beta"},
}

// learnTypes writes a key with each of typeWrites on the build at addr
// and asks its TYPE; the keys are deleted again.
func learnTypes(ctx context.Context, addr string) []TypeWrite {
	var out []TypeWrite
	seen := map[string]bool{}
	for i, w := range typeWrites {
		key := fmt.Sprintf("kavach:learn-type:%d", i)
		args := append([]string{w[0], key}, w[2:]...)
		if v, err := call(ctx, addr, args...); err != nil || v.Kind == KindError {
			continue
		}
		v, err := call(ctx, addr, "TYPE", key)
		call(ctx, addr, "DEL", key)
		t := strings.ToLower(string(v.Str))
		if err != nil || v.Kind == KindError || t == "" || t == "none" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, TypeWrite{Type: t, Write: w})
	}
	return out
}

// learnKeys asks COMMAND INFO where each command's keys are (first,
// last and step, and the key specs, a subcommand's too), and which of
// the commands the build has.
func learnKeys(ctx context.Context, addr string, kinds []string) (map[string]KeyRange, map[string][]KeySpec, map[string]bool) {
	v, err := call(ctx, addr, append([]string{"COMMAND", "INFO"}, kinds...)...)
	if err != nil || v.Kind == KindError {
		return map[string]KeyRange{}, map[string][]KeySpec{}, map[string]bool{}
	}
	return readCommandInfo(v)
}

// readCommandInfo reads a COMMAND INFO reply as learnKeys gives it.
func readCommandInfo(v Value) (map[string]KeyRange, map[string][]KeySpec, map[string]bool) {
	out, specs, has := map[string]KeyRange{}, map[string][]KeySpec{}, map[string]bool{}
	var read func(info Value, top bool)
	read = func(info Value, top bool) {
		if len(info.Elems) < 6 {
			return // a command the build does not know: nil
		}
		num := func(i int) int { return int(info.Elems[i].Int) }
		name := strings.ToUpper(string(info.Elems[0].Str))
		out[name] = KeyRange{First: num(3), Last: num(4), Step: num(5)}
		if top {
			has[name] = true
		}
		if len(info.Elems) > 8 && len(info.Elems[8].Elems) > 0 {
			specs[name] = keySpecs(info.Elems[8])
		}
		if len(info.Elems) > 9 {
			for _, sub := range info.Elems[9].Elems {
				read(sub, false)
			}
		}
	}
	for _, info := range v.Elems {
		read(info, true)
	}
	return out, specs, has
}

// keySpecs reads COMMAND INFO's key specs element: a list of maps, each
// with flags, begin_search and find_keys (RESP2 flat arrays or RESP3 maps).
func keySpecs(v Value) []KeySpec {
	var out []KeySpec
	for _, e := range v.Elems {
		p := pairs(e)
		var ks KeySpec
		for _, f := range p["flags"].Elems {
			switch strings.ToLower(string(f.Str)) {
			case "not_key":
				ks.NotKey = true
			case "incomplete":
				ks.Incomplete = true
			}
		}
		bs, fk := pairs(p["begin_search"]), pairs(p["find_keys"])
		bspec, fspec := pairs(bs["spec"]), pairs(fk["spec"])
		n := func(m map[string]Value, k string) int { return int(m[k].Int) }
		switch string(bs["type"].Str) {
		case "index":
			ks.Index = n(bspec, "index")
		case "keyword":
			ks.Keyword, ks.StartFrom = string(bspec["keyword"].Str), n(bspec, "startfrom")
		default:
			ks.Unknown = true
		}
		switch string(fk["type"].Str) {
		case "range":
			ks.LastKey, ks.KeyStep, ks.Limit = n(fspec, "lastkey"), n(fspec, "keystep"), n(fspec, "limit")
		case "keynum":
			ks.KeyNum = true
			ks.KeyNumIdx, ks.FirstKey, ks.KeyStep = n(fspec, "keynumidx"), n(fspec, "firstkey"), n(fspec, "keystep")
		default:
			ks.Unknown = true
		}
		out = append(out, ks)
	}
	return out
}

// keyPositions are the indexes, among the arguments after the name, of a
// command's keys; nil when the build said nothing of the command.
func keyPositions(kr KeyRange, nargs int) []int {
	if kr.First <= 0 || kr.Step <= 0 {
		return nil
	}
	last := kr.Last
	if last < 0 {
		last = nargs + 1 + last
	}
	var out []int
	for p := kr.First; p <= last && p <= nargs; p += kr.Step {
		out = append(out, p-1)
	}
	return out
}

// keysAt are the indexes, among the arguments after the name, of the
// keys the request names (argv: the name first): by the command's key
// specs, read as the server reads them for the request (a keyword
// looked for, a count of keys read), or, for a command the build gave
// none (before Redis 7), by its first key, last key and step. A
// subcommand (XINFO STREAM) is placed by its own. Specs the server
// could not say (Unknown), that name no key, or that do not fit the
// request (a count past its end) place nothing; an empty argument where
// another spec found keys is none (MIGRATE's "" before KEYS).
func keysAt(l *Learned, argv []string) []int {
	if l == nil || len(argv) == 0 {
		return nil
	}
	name := strings.ToUpper(argv[0])
	if len(argv) > 1 {
		if _, ok := l.Keys[name+"|"+strings.ToUpper(argv[1])]; ok {
			name += "|" + strings.ToUpper(argv[1])
		}
	}
	specs, ok := l.Specs[name]
	if !ok {
		return keyPositions(l.Keys[name], len(argv)-1)
	}
	found := map[int]bool{}
	var empty []int
	for _, ks := range specs {
		for _, i := range ks.find(argv) {
			if argv[i] == "" {
				empty = append(empty, i)
				continue
			}
			found[i] = true
		}
	}
	if len(found) == 0 {
		for _, i := range empty {
			found[i] = true
		}
	}
	out := make([]int, 0, len(found))
	for i := range found {
		out = append(out, i-1)
	}
	slices.Sort(out)
	return out
}

// find are the argument indexes (0 is the name) a key spec places in
// argv, as the server's own search does (db.c, getKeysUsingKeySpecs).
func (ks KeySpec) find(argv []string) []int {
	argc := len(argv)
	if ks.Unknown || ks.NotKey {
		return nil
	}
	first := ks.Index
	if ks.Keyword != "" {
		first = 0
		if ks.StartFrom > 0 {
			for i := ks.StartFrom; i < argc-1; i++ {
				if strings.EqualFold(argv[i], ks.Keyword) {
					first = i + 1
					break
				}
			}
		} else {
			for i := argc + ks.StartFrom; i > 1 && i < argc; i-- {
				if strings.EqualFold(argv[i], ks.Keyword) {
					first = i + 1
					break
				}
			}
		}
	}
	if first <= 0 {
		return nil
	}
	var last int
	switch {
	case ks.KeyNum:
		if ks.KeyNumIdx < 0 || first+ks.KeyNumIdx >= argc {
			return nil
		}
		n, err := strconv.Atoi(argv[first+ks.KeyNumIdx])
		if err != nil || n < 0 {
			return nil
		}
		first += ks.FirstKey
		last = first + n - 1
	case ks.LastKey >= 0:
		last = first + ks.LastKey
	case ks.Limit == 0:
		last = argc + ks.LastKey
	default:
		last = first + ((argc-first)/ks.Limit + ks.LastKey)
	}
	step := max(ks.KeyStep, 1)
	if last >= argc || last < first || first >= argc {
		return nil
	}
	var out []int
	for i := first; i <= last; i += step {
		out = append(out, i)
	}
	return out
}

// typeKeys bounds how many keys of one request (the first ones) are put
// on keys of other types: each gets one variant per type, and a request
// naming thousands of keys (MSET, DEL) must not give tens of thousands.
const typeKeys = 16

// Substitutions are the request on a key of every type the build has, for
// each key it names (the first typeKeys): the key replaced by a new one, written right before
// with realistic content. One of the types is the recorded key's own
// (another key of its type, with other content); a missing key is a
// field variant already. Without a learned schema there are none.
func (Integration) Substitutions(request []byte, schema kavach.Schema) []kavach.Substitution {
	l, ok := schema.(*Learned)
	if !ok || l == nil {
		return nil
	}
	c, err := ParseCommand(request)
	if err != nil || c.Name == "" {
		return nil
	}
	var out []kavach.Substitution
	argv := argStrings(c.Args)
	keys := keysAt(l, argv)
	if len(keys) > typeKeys {
		keys = keys[:typeKeys]
	}
	for _, p := range keys {
		for _, tw := range l.Types {
			key := "kavach:type:" + tw.Type
			old := string(c.Args[p+1])
			write := [][]byte{[]byte(tw.Write[0]), []byte(key)}
			for _, a := range tw.Write[2:] {
				write = append(write, []byte(a))
			}
			sub := kavach.Substitution{
				Setup: [][]byte{AppendCommand(nil, write...)},
				Edit:  &kavach.FieldEdit{Field: p, Value: key},
				What:  fmt.Sprintf("argument %d (key) %s → a %s key (%s)", p+1, strconv.Quote(old), tw.Type, strings.Join(append([]string{tw.Write[0], key}, tw.Write[2:]...), " ")),
			}
			if len(request) <= wideRequest {
				args := append([][]byte{}, c.Args...)
				args[p+1] = []byte(key)
				sub.Request = AppendCommand(nil, args...)
			}
			out = append(out, sub)
		}
	}
	return out
}

// argStrings is a command's arguments as strings.
func argStrings(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}
