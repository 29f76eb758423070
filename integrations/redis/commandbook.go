package redis

import (
	"fmt"
	"maps"
	"strings"
	"time"
)

// commandBook is what a running service said of its commands (COMMAND
// INFO, asked once per command on a connection of the recorder's own):
// where their keys are and their flags. The Toucher and the Watcher each
// keep one. Not safe for concurrent use.
type commandBook struct {
	c     *client
	keys  map[string]KeyRange
	specs map[string][]KeySpec
	flags map[string]map[string]bool // command (and "CMD|SUB") -> its flags
	asked map[string]bool
}

func newCommandBook(c *client) *commandBook {
	return &commandBook{c: c, keys: map[string]KeyRange{}, specs: map[string][]KeySpec{},
		flags: map[string]map[string]bool{}, asked: map[string]bool{}}
}

// learn asks the service about the command of argv, once: refused is the
// service's error reply the first time it was asked ("" when it answered,
// or was asked before); err a failed question.
func (b *commandBook) learn(argv []string) (refused string, err error) {
	name := strings.ToUpper(argv[0])
	if b.asked[name] {
		return "", nil
	}
	b.asked[name] = true
	b.c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	defer b.c.conn.SetDeadline(time.Time{})
	v, err := b.c.do("COMMAND", "INFO", name)
	if err != nil {
		return "", fmt.Errorf("COMMAND INFO %s: %w", name, err)
	}
	if v.Kind == KindError {
		return firstLine(v.Str), nil
	}
	keys, specs, _ := readCommandInfo(v)
	maps.Copy(b.keys, keys)
	maps.Copy(b.specs, specs)
	maps.Copy(b.flags, commandFlags(v))
	return "", nil
}

// flagsOf are the flags of argv's command (its subcommand's, where it has
// one); nil when the service did not say.
func (b *commandBook) flagsOf(argv []string) map[string]bool {
	name := strings.ToUpper(argv[0])
	if len(argv) > 1 {
		if f, ok := b.flags[name+"|"+strings.ToUpper(argv[1])]; ok {
			return f
		}
	}
	return b.flags[name]
}

// keyArgs are the arguments of argv (args, as bytes) that the service's
// key specs place as keys.
func (b *commandBook) keyArgs(argv []string, args [][]byte) [][]byte {
	var out [][]byte
	for _, i := range keysAt(&Learned{Keys: b.keys, Specs: b.specs}, argv) {
		if i >= 0 && i+1 < len(args) {
			out = append(out, args[i+1])
		}
	}
	return out
}
