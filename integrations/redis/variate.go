package redis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kavach-dev/kavach"
)

// Schema is what COMMAND DOCS says about each command's arguments, by
// upper-case command name.
type Schema map[string][]ArgSpec

// ArgSpec is one documented argument: its name and type ("key",
// "string", "integer", "double", "pattern", "unix-time", "pure-token",
// "oneof", "block"), whether it may be left out or repeated, and the
// tokens it (or its alternatives) accept.
type ArgSpec struct {
	Name     string
	Type     string
	Token    string
	Optional bool
	Multiple bool
	// MultipleToken: the token comes again before each repetition.
	MultipleToken bool
	// Tokens are the words accepted at this position: the token of a
	// pure-token, the tokens of a oneof's alternatives.
	Tokens []string
	// Args are a block's parts, in order, or a oneof's alternatives.
	Args []ArgSpec
}

// Learn asks the build at addr about the given commands: their arguments
// (COMMAND DOCS), where their keys are (COMMAND INFO), the types of key
// the build has (learnTypes), and the families COMMAND DOCS gives them
// (deriveFamilies: every command's docs are asked, once). It returns a
// *Learned. Builds without COMMAND DOCS (Redis before 7) give no
// arguments and no derived families, and Fields falls back to guessing.
func (Integration) Learn(ctx context.Context, addr string, kinds []string) (kavach.Schema, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// The other members of the commands' families too: their siblings
	// are made only where the build has them.
	kinds = append(slices.Clone(kinds), familyMembers(kinds)...)
	v, err := call(ctx, addr, "COMMAND", "DOCS")
	if err != nil {
		return nil, fmt.Errorf("learn commands: %w", err)
	}
	s := Schema{}
	var derived map[string]DerivedFamily
	if v.Kind != KindError {
		derived = deriveFamilies(docEntries(v), kinds)
	}
	asked := slices.Clone(kinds)
	for _, d := range derived {
		for _, m := range d.Members {
			if !slices.Contains(asked, m) {
				asked = append(asked, m)
			}
		}
	}
	// CLIENT's subcommands say which connection modes the build has
	// (Modes).
	if !slices.Contains(asked, "CLIENT") {
		asked = append(asked, "CLIENT")
	}
	keys, specs, has := learnKeys(ctx, addr, asked)
	l := &Learned{Args: s, Keys: keys, Specs: specs, Types: learnTypes(ctx, addr), Commands: has, Derived: derived}
	if v.Kind == KindError {
		return l, nil
	}
	for name, doc := range pairs(v) {
		if !slices.Contains(asked, strings.ToUpper(name)) {
			continue
		}
		for key, val := range pairs(doc) {
			if key == "arguments" {
				s[strings.ToUpper(name)] = argSpecs(val)
			}
		}
	}
	return l, nil
}

// pairs reads a RESP2 flat key/value array or a RESP3 map.
func pairs(v Value) map[string]Value {
	out := map[string]Value{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		out[string(v.Elems[i].Str)] = v.Elems[i+1]
	}
	return out
}

func argSpecs(v Value) []ArgSpec {
	var specs []ArgSpec
	for _, a := range v.Elems {
		p := pairs(a)
		spec := ArgSpec{Name: string(p["name"].Str), Type: string(p["type"].Str), Token: string(p["token"].Str)}
		for _, f := range p["flags"].Elems {
			switch string(f.Str) {
			case "optional":
				spec.Optional = true
			case "multiple":
				spec.Multiple = true
			case "multiple_token":
				spec.Multiple, spec.MultipleToken = true, true
			}
		}
		if spec.Token != "" {
			spec.Tokens = append(spec.Tokens, spec.Token)
		}
		if spec.Type == "oneof" || spec.Type == "block" {
			spec.Args = argSpecs(p["arguments"])
		}
		if spec.Type == "oneof" {
			for _, alt := range spec.Args {
				spec.Tokens = append(spec.Tokens, alt.Tokens...)
			}
		}
		specs = append(specs, spec)
	}
	return specs
}

// Fields splits a command into its name (the kind, upper case) and its
// arguments. With a schema, arguments take the documented types
// positionally, as long as no optional or repeated argument comes before
// them; an argument equal to a documented token is a token with the
// other tokens of its place as alternatives. The rest is guessed: a
// number if it parses as an integer, else a string.
func (Integration) Fields(request []byte, schema kavach.Schema) (string, []kavach.Field, bool) {
	c, err := ParseCommand(request)
	if err != nil || c.Name == "" {
		return "", nil, false
	}
	var specs []ArgSpec
	switch s := schema.(type) {
	case Schema:
		specs = s[c.Name]
	case *Learned:
		specs = s.Args[c.Name]
	}
	fields := make([]kavach.Field, 0, len(c.Args)-1)
	positional := true
	for i, a := range c.Args[1:] {
		f := kavach.Field{Value: string(a), Type: guess(a)}
		if positional && i < len(specs) {
			sp := specs[i]
			if sp.Optional || sp.Multiple || sp.Type == "oneof" || sp.Type == "block" || sp.Type == "pure-token" {
				positional = false
			} else {
				f.Name = sp.Name
				switch sp.Type {
				case "key":
					f.Type = kavach.FieldKey
				case "integer", "unix-time":
					f.Type = kavach.FieldNumber
				case "string", "pattern", "double":
					f.Type = kavach.FieldString
					if sp.Type == "double" && guess(a) == kavach.FieldNumber {
						f.Type = kavach.FieldNumber
					}
				}
			}
		}
		for _, sp := range specs {
			if alts := tokenAlternatives(sp, string(a)); alts != nil {
				f.Type, f.Name, f.Alternatives = kavach.FieldToken, sp.Name, alts
				break
			}
		}
		fields = append(fields, f)
	}
	return c.Name, fields, true
}

// tokenAlternatives returns the other tokens of a place that accepts
// word, or nil if it does not.
func tokenAlternatives(sp ArgSpec, word string) []string {
	found := false
	var alts []string
	for _, t := range sp.Tokens {
		if strings.EqualFold(t, word) {
			found = true
		} else {
			alts = append(alts, t)
		}
	}
	if !found {
		return nil
	}
	if alts == nil {
		alts = []string{}
	}
	return alts
}

func guess(a []byte) kavach.FieldType {
	if _, err := strconv.ParseInt(string(a), 10, 64); err == nil {
		return kavach.FieldNumber
	}
	return kavach.FieldString
}

// Rebuild encodes the command again (its name as sent) with the fields as
// its arguments, as an array of bulk strings.
func (Integration) Rebuild(request []byte, fields []kavach.Field) []byte {
	name := []byte("")
	if c, err := ParseCommand(request); err == nil && len(c.Args) > 0 {
		name = c.Args[0]
	}
	args := make([][]byte, 0, len(fields)+1)
	args = append(args, name)
	for _, f := range fields {
		args = append(args, []byte(f.Value))
	}
	return AppendCommand(nil, args...)
}
