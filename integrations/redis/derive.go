package redis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A DerivedFamily is a family of commands the build's COMMAND DOCS gives:
// the commands of one group (its `group` field: "set", "list", ...) whose
// argument grammars are the same, argument for argument (names, types,
// flags, tokens, in order, blocks and one-of groups alike): SUNIONSTORE,
// SDIFFSTORE and SINTERSTORE; LPUSH and RPUSH. The same request is one
// for each of them, so a sibling is the request with the name changed.
type DerivedFamily struct {
	Group   string
	Members []string // every member, the command itself included, by name
}

// Name is how a derived family is named in variant descriptions and the
// report.
func (d DerivedFamily) Name() string { return "derived from COMMAND DOCS group " + d.Group }

// docEntry is what deriveFamilies needs of one command's COMMAND DOCS.
type docEntry struct {
	group   string
	grammar string // the arguments, written out (grammarKey); "" for none
}

// docEntries reads a COMMAND DOCS reply: each command's group and the
// grammar of its arguments. A container (CONFIG, XINFO: subcommands and
// no arguments of its own) has none.
func docEntries(v Value) map[string]docEntry {
	out := map[string]docEntry{}
	for name, doc := range pairs(v) {
		d := pairs(doc)
		var b strings.Builder
		grammarKey(&b, d["arguments"])
		out[strings.ToUpper(name)] = docEntry{group: string(d["group"].Str), grammar: b.String()}
	}
	return out
}

// grammarKey writes arguments as one string that two commands share when
// their grammars are the same: each argument's name, type, token and
// flags, and its own arguments (a block's, a oneof's), in order.
// Descriptions (summary, since, display text) and key spec indexes are
// left out: they do not change what a request may say.
func grammarKey(b *strings.Builder, args Value) {
	for _, a := range args.Elems {
		p := pairs(a)
		var flags []string
		for _, f := range p["flags"].Elems {
			flags = append(flags, string(f.Str))
		}
		slices.Sort(flags)
		b.WriteString("(" + string(p["name"].Str) + " " + string(p["type"].Str) + " " + string(p["token"].Str) + " [" + strings.Join(flags, ",") + "]")
		grammarKey(b, p["arguments"])
		b.WriteString(")")
	}
}

// deriveFamilies are, for each of commands that no family of the table
// has (FamilyOf), the other commands of its COMMAND DOCS group with the
// same grammar, none of them in the table either: the table's families,
// with their own argument mappings, win where they apply. A command with
// no arguments gets none (DBSIZE and LASTSAVE share a group and an empty
// grammar, not an operation). Members are sorted by name: one seed, one
// set of variants, whatever order the build lists its commands in.
func deriveFamilies(docs map[string]docEntry, commands []string) map[string]DerivedFamily {
	out := map[string]DerivedFamily{}
	for _, c := range commands {
		c = strings.ToUpper(c)
		d, ok := docs[c]
		if _, fixed := FamilyOf(c); !ok || fixed || d.grammar == "" || d.group == "" {
			continue
		}
		var members []string
		for name, o := range docs {
			if _, fixed := FamilyOf(name); !fixed && o.group == d.group && o.grammar == d.grammar {
				members = append(members, name)
			}
		}
		if len(members) < 2 {
			continue
		}
		slices.Sort(members)
		out[c] = DerivedFamily{Group: d.group, Members: members}
	}
	return out
}

// derivedSiblings are command (its name first) made by each other member
// of its derived family: the same arguments under another name.
func derivedSiblings(command []string, l *Learned) []Sibling {
	if l == nil || len(command) == 0 {
		return nil
	}
	name := strings.ToUpper(command[0])
	d, ok := l.Derived[name]
	if !ok {
		return nil
	}
	var out []Sibling
	for _, m := range d.Members {
		if m == name {
			continue
		}
		args := append([]string{m}, command[1:]...)
		out = append(out, Sibling{Family: d.Name(), Args: args,
			What: name + " → " + showCommand(m, command[1:]) + " (" + d.Name() + ")"})
	}
	return out
}

// Group asks the build at addr for the COMMAND DOCS group of request's
// command and every command of that group, sorted
// (kavach.Abilities.Group): the changed-refusal rule's reach, from the
// build rather than the family table. A build without COMMAND DOCS
// (Redis before 7), or a command it does not document, gives an error.
func (Integration) Group(ctx context.Context, addr string, request []byte) (string, []string, error) {
	c, err := ParseCommand(request)
	if err != nil || c.Name == "" {
		return "", nil, fmt.Errorf("group: not a command")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := call(ctx, addr, "COMMAND", "DOCS")
	if err != nil {
		return "", nil, fmt.Errorf("group of %s: %w", c.Name, err)
	}
	if v.Kind == KindError {
		return "", nil, fmt.Errorf("group of %s: COMMAND DOCS: %s", c.Name, v.Str)
	}
	return groupOf(docEntries(v), c.Name)
}

// groupOf is command's group in docs and the commands of that group,
// sorted.
func groupOf(docs map[string]docEntry, command string) (string, []string, error) {
	d, ok := docs[strings.ToUpper(command)]
	if !ok || d.group == "" {
		return "", nil, fmt.Errorf("group of %s: COMMAND DOCS does not give one", command)
	}
	var members []string
	for name, o := range docs {
		if o.group == d.group {
			members = append(members, name)
		}
	}
	slices.Sort(members)
	return d.group, members, nil
}
