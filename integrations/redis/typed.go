package redis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kavach-dev/kavach"
)

// typedMember is a command with an integer argument: the commands a
// request (or a script's call site) with an integer argument is made by,
// whatever its family ("typed-sibling" variants). form is its arguments
// after the name: "%k" the key, "%n" the integer, anything else a
// constant the grammar requires. typ is the type of key it takes, written
// first on a key of its own (typedKey): "counter" a string holding an
// integer, "string", "list", "hash", or "" a key that does not exist.
type typedMember struct {
	name string
	typ  string
	form []string
	// site: it may replace a script's call site. SETRANGE may not: a
	// computed offset the variant cannot see could make it allocate up
	// to 512 MB.
	site bool
}

var typedMembers = []typedMember{
	{"INCRBY", "counter", []string{"%k", "%n"}, true},
	{"DECRBY", "counter", []string{"%k", "%n"}, true},
	{"HINCRBY", "hash", []string{"%k", "kavach", "%n"}, true},
	{"SETEX", "", []string{"%k", "%n", "kavach"}, true},
	{"PSETEX", "", []string{"%k", "%n", "kavach"}, true},
	{"EXPIRE", "string", []string{"%k", "%n"}, true},
	{"PEXPIRE", "string", []string{"%k", "%n"}, true},
	{"LTRIM", "list", []string{"%k", "0", "%n"}, true},
	{"LRANGE", "list", []string{"%k", "0", "%n"}, true},
	{"LINDEX", "list", []string{"%k", "%n"}, true},
	{"GETRANGE", "string", []string{"%k", "0", "%n"}, true},
	{"SETRANGE", "string", []string{"%k", "%n", "x"}, false},
}

// typedKey is the key a typed sibling works on, and the writes that give
// it its type (deleted first: a key of another type would answer
// WRONGTYPE, on any build).
func typedKey(typ string) (string, [][]string) {
	k := "kavach:typed:" + typ
	if typ == "" {
		k = "kavach:typed:none"
	}
	setup := [][]string{{"DEL", k}}
	switch typ {
	case "counter":
		setup = append(setup, []string{"SET", k, "1"})
	case "string":
		setup = append(setup, []string{"SET", k, "kavach"})
	case "list":
		setup = append(setup, []string{"RPUSH", k, "a", "b", "c"})
	case "hash":
		setup = append(setup, []string{"HSET", k, "kavach", "1"})
	}
	return k, setup
}

// integerArg is the index (among the arguments after the name) of
// command name's integer argument, given nargs of them: its place in
// typedMembers, else the first integer COMMAND DOCS places before any
// optional or repeated argument; -1 for none.
func integerArg(name string, nargs int, schema kavach.Schema) int {
	for _, m := range typedMembers {
		if m.name == name && len(m.form) == nargs {
			return slices.Index(m.form, "%n")
		}
	}
	var specs []ArgSpec
	switch s := schema.(type) {
	case Schema:
		specs = s[name]
	case *Learned:
		specs = s.Args[name]
	}
	for i, sp := range specs {
		if i >= nargs || sp.Optional || sp.Multiple || sp.Type == "oneof" || sp.Type == "block" || sp.Type == "pure-token" {
			break
		}
		if sp.Type == "integer" {
			return i
		}
	}
	return -1
}

// kinOf are the commands the existing sibling variants already make of
// name: at the top level its family's members (families), at a script's
// call site its luaFamilies' members.
func kinOf(name string, site bool) []string {
	var out []string
	if site {
		for _, f := range luaFamilies {
			if slices.ContainsFunc(f.members, func(m luaMember) bool { return strings.EqualFold(m.name, name) }) {
				for _, m := range f.members {
					out = append(out, m.name)
				}
			}
		}
		return out
	}
	if f, ok := FamilyOf(name); ok {
		for _, m := range f.Members {
			out = append(out, m.Command)
		}
	}
	return out
}

// TypedSiblings makes the request by each command of typedMembers of
// another family, its integer argument carried over, on a key of the
// type that command takes (written first); for a script (EVAL, or the
// script an EVALSHA or FCALL runs, found in the request alone), each
// call site with an integer argument rewritten so. It is pure.
func (Integration) TypedSiblings(request []byte, schema kavach.Schema) []kavach.Substitution {
	return typedSiblings(request, nil, schema)
}

func (a afterCodec) TypedSiblings(request []byte, schema kavach.Schema) []kavach.Substitution {
	return typedSiblings(request, a.earlier, schema)
}

func typedSiblings(request []byte, earlier [][]byte, schema kavach.Schema) []kavach.Substitution {
	c, err := ParseCommand(request)
	if err != nil || c.Name == "" {
		return nil
	}
	if s, _, ok := findScript(c, earlier); ok {
		return typedSites(s)
	}
	args := make([]string, len(c.Args)-1)
	for i, a := range c.Args[1:] {
		args[i] = string(a)
	}
	at := integerArg(c.Name, len(args), schema)
	if at < 0 {
		return nil
	}
	kin := kinOf(c.Name, false)
	var out []kavach.Substitution
	for _, m := range typedMembers {
		if m.name == c.Name || slices.Contains(kin, m.name) {
			continue
		}
		n := args[at]
		if m.name == "SETRANGE" {
			// An offset past 1 MiB, under Redis's 512 MB limit, would
			// allocate it.
			if v, err := strconv.ParseInt(n, 10, 64); err == nil && v > 1<<20 && v < 512<<20 {
				continue
			}
		}
		key, setup := typedKey(m.typ)
		to := make([]string, len(m.form))
		for i, f := range m.form {
			switch f {
			case "%k":
				to[i] = key
			case "%n":
				to[i] = n
			default:
				to[i] = f
			}
		}
		sub := kavach.Substitution{Request: command(append([]string{m.name}, to...)), Group: "the request",
			What: fmt.Sprintf("%s → %s, %s in the same role (%s)", showCommand(c.Name, args), showCommand(m.name, to), integerWords(at, args[at]), typeWords(m.typ))}
		for _, w := range setup {
			sub.Setup = append(sub.Setup, command(w))
		}
		out = append(out, sub)
	}
	return out
}

func integerWords(i int, v string) string {
	return fmt.Sprintf("the integer argument %d (%s)", i+1, strconv.Quote(v))
}

func typeWords(typ string) string {
	switch typ {
	case "counter":
		return "on a key holding an integer, written first"
	case "":
		return "on a key that does not exist"
	}
	return "on a " + typ + " key, written first"
}

// typedSites are a script's call sites with an integer argument, each
// rewritten to call each command of typedMembers of another family with
// that argument's expression, on a key of the type it takes (a literal
// key, written by requests sent before the script).
func typedSites(s luaScript) []kavach.Substitution {
	calls, err := luaCalls(s.src)
	if err != nil {
		return nil
	}
	sites := len(calls)
	if s.reg != nil {
		calls = within(calls, *s.reg)
	}
	var out []kavach.Substitution
	for i, c := range calls[:min(len(calls), luaSites)] {
		name := strings.ToUpper(c.name)
		at := integerArg(name, len(c.args), nil)
		if at < 0 {
			continue
		}
		expr := s.src[c.args[at][0]:c.args[at][1]]
		kin := kinOf(name, true)
		q := s.src[c.nameStart-1]
		for _, m := range typedMembers {
			if !m.site || m.name == name || slices.ContainsFunc(kin, func(k string) bool { return strings.EqualFold(k, m.name) }) {
				continue
			}
			key, setup := typedKey(m.typ)
			parts := make([]string, len(m.form))
			for k, f := range m.form {
				switch f {
				case "%k":
					parts[k] = "'" + key + "'"
				case "%n":
					parts[k] = expr
				default:
					parts[k] = "'" + f + "'"
				}
			}
			text := s.src[:c.nameStart-1] + string(q) + sameCase(m.name, c.name) + string(q) + ", " + strings.Join(parts, ", ") + s.src[c.close:]
			// An argument dropped must not take another call site
			// with it: the script would do less than the site change.
			if again, err := luaCalls(text); err != nil || len(again) != sites {
				continue
			}
			load, req := s.send(text)
			what := fmt.Sprintf("script site %d, %s(%q, …, %s) → %s(%q, %s) (%s)", i+1, c.fn, c.name, expr, c.fn, sameCase(m.name, c.name), strings.Join(parts, ", "), typeWords(m.typ))
			if s.how != "" {
				what += ", " + s.how
			}
			sub := kavach.Substitution{Request: req, Group: "script site " + strconv.Itoa(i+1), What: what}
			for _, w := range setup {
				sub.Setup = append(sub.Setup, command(w))
			}
			sub.Setup = append(sub.Setup, load...)
			out = append(out, sub)
		}
	}
	return out
}

// SiteTransplants are the request with value put, in turn, in place of
// each number literal its script's call sites pass (`redis.call('EXPIRE',
// KEYS[1], 60)`: the 60), the changed script run as the request runs it
// (an EVALSHA's loaded again first): where the failing request's trigger
// goes inside another script. value must be an integer; nil for a
// request that runs no script Kavach can read. It is pure.
func (Integration) SiteTransplants(request []byte, value string) []kavach.Substitution {
	return siteTransplants(request, nil, value)
}

func (a afterCodec) SiteTransplants(request []byte, value string) []kavach.Substitution {
	return siteTransplants(request, a.earlier, value)
}

func siteTransplants(request []byte, earlier [][]byte, value string) []kavach.Substitution {
	if _, err := strconv.ParseInt(value, 10, 64); err != nil {
		return nil
	}
	c, err := ParseCommand(request)
	if err != nil || c.Name == "" {
		return nil
	}
	s, _, ok := findScript(c, earlier)
	if !ok {
		return nil
	}
	calls, err := luaCalls(s.src)
	if err != nil {
		return nil
	}
	if s.reg != nil {
		calls = within(calls, *s.reg)
	}
	var out []kavach.Substitution
	for i, call := range calls[:min(len(calls), luaSites)] {
		for k, a := range call.args {
			lit := s.src[a[0]:a[1]]
			if toks, err := luaTokens(lit); err != nil || len(toks) != 1 || toks[0].kind != '0' || lit == value {
				continue
			}
			text := s.src[:a[0]] + "(" + value + ")" + s.src[a[1]:]
			setup, req := s.send(text)
			what := fmt.Sprintf("script site %d, %s(%q, …) argument %d %s → %s", i+1, call.fn, call.name, k+1, lit, value)
			if s.how != "" {
				what += ", " + s.how
			}
			out = append(out, kavach.Substitution{Setup: setup, Request: req, Group: "script site " + strconv.Itoa(i+1), What: what})
		}
	}
	return out
}
