package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/kavach-dev/kavach"
)

var _ kavach.TypeVariator = Codec{}

// Learned is what Learn asks the old build: each command's arguments
// (COMMAND DOCS), where its keys are (COMMAND INFO), and the types of key
// the build has, each with a write that makes one (TYPE).
type Learned struct {
	Args  Schema
	Keys  map[string]KeyRange
	Types []TypeWrite
	// Commands are the commands asked about that the build has (COMMAND
	// INFO answered them): those of the fixture and the other members of
	// their families (families.go).
	Commands map[string]bool
}

// KeyRange is where a command's keys are, as COMMAND INFO gives it from
// the command's key specs: the first and last key's argument positions
// (1 is the first argument after the name; a negative last counts from
// the end, -1 being the last argument) and the step between keys. First
// is 0 for a command without keys.
type KeyRange struct{ First, Last, Step int }

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

// learnKeys asks COMMAND INFO where each command's keys are, and which
// of the commands the build has.
func learnKeys(ctx context.Context, addr string, kinds []string) (map[string]KeyRange, map[string]bool) {
	out, has := map[string]KeyRange{}, map[string]bool{}
	v, err := call(ctx, addr, append([]string{"COMMAND", "INFO"}, kinds...)...)
	if err != nil || v.Kind == KindError {
		return out, has
	}
	for _, info := range v.Elems {
		if len(info.Elems) < 6 {
			continue // a command the build does not know: nil
		}
		num := func(i int) int { return int(info.Elems[i].Int) }
		name := strings.ToUpper(string(info.Elems[0].Str))
		out[name] = KeyRange{First: num(3), Last: num(4), Step: num(5)}
		has[name] = true
	}
	return out, has
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

// Substitutions are the request on a key of every type the build has, for
// each key it names: the key replaced by a new one, written right before
// with realistic content. One of the types is the recorded key's own
// (another key of its type, with other content); a missing key is a
// field variant already. Without a learned schema there are none.
func (Codec) Substitutions(request []byte, schema kavach.Schema) []kavach.Substitution {
	l, ok := schema.(*Learned)
	if !ok || l == nil {
		return nil
	}
	c, err := ParseCommand(request)
	if err != nil || c.Name == "" {
		return nil
	}
	var out []kavach.Substitution
	for _, p := range keyPositions(l.Keys[c.Name], len(c.Args)-1) {
		for _, tw := range l.Types {
			key := "kavach:type:" + tw.Type
			args := append([][]byte{}, c.Args...)
			old := string(args[p+1])
			args[p+1] = []byte(key)
			write := [][]byte{[]byte(tw.Write[0]), []byte(key)}
			for _, a := range tw.Write[2:] {
				write = append(write, []byte(a))
			}
			out = append(out, kavach.Substitution{
				Setup:   [][]byte{AppendCommand(nil, write...)},
				Request: AppendCommand(nil, args...),
				What:    fmt.Sprintf("argument %d (key) %s → a %s key (%s)", p+1, strconv.Quote(old), tw.Type, strings.Join(append([]string{tw.Write[0], key}, tw.Write[2:]...), " ")),
			})
		}
	}
	return out
}
