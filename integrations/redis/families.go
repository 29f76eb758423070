package redis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kavach-dev/kavach"
)

// A Family is a set of commands where one defect can live in every
// member: the same operation by other commands (docs/variants.md,
// "Sibling commands"). Its members share roles (a key, an increment, a
// time and its unit, a script, ...): each member reads the roles from its
// arguments and writes its arguments from them.
type Family struct {
	Name    string
	Members []Member
}

// Member is one command of a family: its name, the type of key it works
// on ("" for any), and how it reads and writes the family's roles.
type Member struct {
	Command string
	Type    string
	read    func(args []string) (roles, bool)
	write   func(r roles) (setup [][]string, args []string, ok bool)
	// also, when set, makes one more request of the member: DECRBY's
	// increment as given, besides the same operation.
	also func(r roles) (args []string, ok bool)
}

// roles are what a member's arguments mean in its family: "key",
// "incr", "field", "time", "unit", "value", "script", "sha", "fn",
// "numkeys", "end", "count", "start", "stop"; rest holds
// a script's keys and arguments.
type roles struct {
	m    map[string]string
	rest []string
}

func (r roles) get(k string) string { return r.m[k] }

func (r roles) with(kv ...string) roles {
	m := make(map[string]string, len(r.m)+len(kv)/2)
	for k, v := range r.m {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return roles{m, r.rest}
}

func role(kv ...string) roles { return roles{}.with(kv...) }

// Sibling is a failing request made by another member of its family:
// Setup are commands sent right before it (SCRIPT LOAD, FUNCTION LOAD,
// a key of the member's type, the value an expiry applies to), Args
// its arguments, the name first.
type Sibling struct {
	Family string
	Setup  [][]string
	Args   []string
	// Moved says the sibling is on a key of its own type, written by the
	// first Moved.Writes of Setup; nil when it is on the recorded key.
	Moved *kavach.KeyMove
	What  string
}

// Families is the table of families, in the order siblings are made.
func Families() []Family { return families }

// FamilyOf is the family of a command (upper or lower case).
func FamilyOf(command string) (Family, bool) {
	command = strings.ToUpper(command)
	for _, f := range families {
		for _, m := range f.Members {
			if m.Command == command {
				return f, true
			}
		}
	}
	return Family{}, false
}

// familyMembers are the other members of the families of commands, for
// Learn to ask about.
func familyMembers(commands []string) []string {
	var out []string
	for _, c := range commands {
		if f, ok := FamilyOf(c); ok {
			for _, m := range f.Members {
				if !slices.Contains(commands, m.Command) && !slices.Contains(out, m.Command) {
					out = append(out, m.Command)
				}
			}
		}
	}
	return out
}

// Siblings are command (its name first) made by each other member of
// its family, with the arguments mapped (docs/variants.md). Members the
// build does not have (l, learned from it, says so) are skipped and
// named in skipped; so is every member when nothing was learned. A
// member whose arguments cannot be made from the command's (EVAL from
// EVALSHA: the script is not in the request) gives none, silently.
func Siblings(command []string, l *Learned) (sibs []Sibling, skipped []string) {
	if len(command) == 0 {
		return nil, nil
	}
	name := strings.ToUpper(command[0])
	f, ok := FamilyOf(name)
	if !ok {
		return derivedSiblings(command, l), nil
	}
	var from *Member
	for i := range f.Members {
		if f.Members[i].Command == name {
			from = &f.Members[i]
		}
	}
	r, ok := from.read(command[1:])
	if !ok {
		return nil, nil
	}
	for _, m := range f.Members {
		if m.Command == name {
			continue
		}
		if l == nil || !l.Commands[m.Command] {
			skipped = append(skipped, m.Command)
			continue
		}
		mr := r
		var typeSetup [][]string
		if from.Type != "" && m.Type != "" && m.Type != from.Type {
			// Another type of key: a new key of the member's type,
			// written as the build's type write makes it.
			key := "kavach:sibling:" + m.Type
			mr = r.with("key", key)
			for _, tw := range l.Types {
				if tw.Type == m.Type {
					typeSetup = append(typeSetup, append([]string{tw.Write[0], key}, tw.Write[2:]...))
				}
			}
		}
		setup, args, ok := m.write(mr)
		if !ok {
			continue
		}
		setup = append(typeSetup, setup...)
		what := fmt.Sprintf("%s → %s", name, showCommand(m.Command, args))
		if len(setup) > 0 {
			var s []string
			for _, c := range setup {
				s = append(s, showCommand(c[0], c[1:]))
			}
			what += " after " + strings.Join(s, ", ")
		}
		sib := Sibling{Family: f.Name, Setup: setup, Args: append([]string{m.Command}, args...), What: what + " (" + f.Name + ")"}
		if len(typeSetup) > 0 {
			sib.Moved = &kavach.KeyMove{From: r.get("key"), To: mr.get("key"), Type: m.Type, Writes: len(typeSetup),
				What: fmt.Sprintf("%s → %s (%s)", name, m.Command, f.Name)}
		}
		sibs = append(sibs, sib)
		if m.also != nil {
			if args, ok := m.also(mr); ok {
				sibs = append(sibs, Sibling{Family: f.Name, Setup: typeSetup, Args: append([]string{m.Command}, args...), Moved: sib.Moved,
					What: fmt.Sprintf("%s → %s, the argument as given (%s)", name, showCommand(m.Command, args), f.Name)})
			}
		}
	}
	return sibs, skipped
}

// showCommand is a command for a person, long arguments cut.
func showCommand(name string, args []string) string {
	q := []string{name}
	for _, a := range args {
		if len(a) > 40 {
			a = a[:32] + "…"
		}
		if strings.ContainsAny(a, " \t\r\n\"'") || a == "" {
			a = strconv.Quote(a)
		}
		q = append(q, a)
	}
	return strings.Join(q, " ")
}

// Siblings makes the failing request with each other member of its
// family (Siblings, above), as kavach.Substitutions. skipped are the
// members the old build does not have. Script runners are left to the
// "runner" variants (Values, lua.go), which make the same requests with
// more care (the _RO forms only for a script that only reads): the
// generator gets each runner once, and skipped names the runners those
// variants leave out because the build lacks them.
func (Integration) Siblings(request []byte, schema kavach.Schema) ([]kavach.Substitution, []string) {
	c, err := ParseCommand(request)
	if err != nil || c.Name == "" {
		return nil, nil
	}
	if f, ok := FamilyOf(c.Name); ok && f.Name == "script runners" {
		return nil, skippedRunners(c, nil, schema)
	}
	l, _ := schema.(*Learned)
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = string(a)
	}
	sibs, skipped := Siblings(args, l)
	out := make([]kavach.Substitution, 0, len(sibs))
	for _, s := range sibs {
		sub := kavach.Substitution{Request: command(s.Args), What: s.What, Moved: s.Moved}
		for _, w := range s.Setup {
			sub.Setup = append(sub.Setup, command(w))
		}
		out = append(out, sub)
	}
	return out, skipped
}

func command(args []string) []byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return AppendCommand(nil, b...)
}

// The families. Each member's read takes the arguments after the name.
var families = []Family{
	{Name: "script runners", Members: []Member{
		scriptMember("EVAL", "script"), scriptMember("EVAL_RO", "script"),
		scriptMember("EVALSHA", "sha"), scriptMember("EVALSHA_RO", "sha"),
		scriptMember("FCALL", "fn"), scriptMember("FCALL_RO", "fn"),
	}},
	{Name: "numeric increments", Members: []Member{
		incrMember("INCRBY", "string", false, false), incrMember("DECRBY", "string", true, false),
		incrMember("INCRBYFLOAT", "string", false, false),
		incrMember("HINCRBY", "hash", false, true), incrMember("HINCRBYFLOAT", "hash", false, true),
		zincrby, unitIncr("INCR", "1"), unitIncr("DECR", "-1"),
	}},
	{Name: "expiry setters", Members: []Member{
		expireMember("EXPIRE", "s"), expireMember("PEXPIRE", "ms"),
		expireMember("EXPIREAT", "unix-s"), expireMember("PEXPIREAT", "unix-ms"),
		setExpire, setexMember("SETEX", "s"), setexMember("PSETEX", "ms"), getex,
	}},
	{Name: "pops", Members: []Member{
		popMember("LPOP", "list", "left"), popMember("RPOP", "list", "right"),
		mpopMember("LMPOP", "list", false), mpopMember("BLMPOP", "list", true),
		bpopMember("BLPOP", "list", "left"), bpopMember("BRPOP", "list", "right"),
		popMember("ZPOPMIN", "zset", "left"), popMember("ZPOPMAX", "zset", "right"),
		mpopMember("ZMPOP", "zset", false), mpopMember("BZMPOP", "zset", true),
		bpopMember("BZPOPMIN", "zset", "left"), bpopMember("BZPOPMAX", "zset", "right"),
		popMember("SPOP", "set", "left"),
	}},
	{Name: "range readers", Members: []Member{
		rangeMember("GETRANGE", "string"), rangeMember("SUBSTR", "string"),
		rangeMember("LRANGE", "list"), rangeMember("ZRANGE", "zset"), rangeMember("ZREVRANGE", "zset"),
	}},
	{Name: "stream range readers", Members: []Member{
		{Command: "XRANGE", Type: "stream",
			read: func(a []string) (roles, bool) {
				if len(a) < 3 {
					return roles{}, false
				}
				return roles{m: map[string]string{"key": a[0], "start": a[1], "stop": a[2]}, rest: a[3:]}, true
			},
			write: func(r roles) ([][]string, []string, bool) {
				return nil, append([]string{r.get("key"), r.get("start"), r.get("stop")}, r.rest...), true
			}},
		{Command: "XREVRANGE", Type: "stream",
			read: func(a []string) (roles, bool) {
				if len(a) < 3 {
					return roles{}, false
				}
				return roles{m: map[string]string{"key": a[0], "start": a[2], "stop": a[1]}, rest: a[3:]}, true
			},
			write: func(r roles) ([][]string, []string, bool) {
				return nil, append([]string{r.get("key"), r.get("stop"), r.get("start")}, r.rest...), true
			}},
	}},
}

// Script runners: EVAL and EVAL_RO take the script, EVALSHA and
// EVALSHA_RO its SHA1 after SCRIPT LOAD, FCALL and FCALL_RO a function
// of a library made of the script (FUNCTION LOAD REPLACE): kavach, and
// kavach_ro registered with the no-writes flag for FCALL_RO. The keys
// and arguments are kept. From a SHA1 or a function name the script is
// not known: only the other form of the same runner is made.
func scriptMember(name, by string) Member {
	ro := strings.HasSuffix(name, "_RO")
	return Member{Command: name,
		read: func(a []string) (roles, bool) {
			if len(a) < 2 {
				return roles{}, false
			}
			return roles{m: map[string]string{by: a[0], "numkeys": a[1]}, rest: a[2:]}, true
		},
		write: func(r roles) ([][]string, []string, bool) {
			var setup [][]string
			var first string
			switch by {
			case "script":
				first = r.get("script")
			case "sha":
				first = r.get("sha")
				if s := r.get("script"); s != "" {
					first = sha1Hex([]byte(s))
					setup = [][]string{{"SCRIPT", "LOAD", s}}
				}
			case "fn":
				first = r.get("fn")
				if s := r.get("script"); s != "" {
					first = "kavach"
					if ro {
						first = "kavach_ro"
					}
					setup = [][]string{{"FUNCTION", "LOAD", "REPLACE", Library(s)}}
				}
			}
			if first == "" {
				return nil, nil, false
			}
			return setup, append([]string{first, r.get("numkeys")}, r.rest...), true
		}}
}

// Library is a function library made of an EVAL script: kavach runs the
// script, kavach_ro the same with the no-writes flag (for FCALL_RO). The
// script's KEYS and ARGV are the function's parameters; a first line
// "#!..." (an EVAL script's shebang) is left out.
func Library(script string) string {
	if strings.HasPrefix(script, "#!") {
		_, script, _ = strings.Cut(script, "\n")
	}
	return "#!lua name=kavach\n" +
		"redis.register_function('kavach', function(KEYS, ARGV)\n" + script + "\nend)\n" +
		"redis.register_function{function_name='kavach_ro', callback=function(KEYS, ARGV)\n" + script + "\nend, flags={'no-writes'}}\n"
}

// Numeric increments: the key and the increment are kept (a hash field
// or a sorted set member is "field" when the command had none). DECRBY
// takes the increment as it was given (the same argument, another
// parser) and also negated (the same operation). INCR and DECR are made
// from an increment of 1 and -1 only.
func incrMember(name, typ string, invert, field bool) Member {
	var also func(r roles) ([]string, bool)
	if invert {
		also = func(r roles) ([]string, bool) {
			return []string{r.get("key"), r.get("incr")}, negate(r.get("incr")) != r.get("incr")
		}
	}
	return Member{Command: name, Type: typ, also: also,
		read: func(a []string) (roles, bool) {
			if field {
				if len(a) != 3 {
					return roles{}, false
				}
				return role("key", a[0], "field", a[1], "incr", a[2]), true
			}
			if len(a) != 2 {
				return roles{}, false
			}
			r := role("key", a[0], "incr", a[1])
			if invert {
				r = r.with("incr", negate(a[1]))
			}
			return r, true
		},
		write: func(r roles) ([][]string, []string, bool) {
			incr := r.get("incr")
			if invert {
				incr = negate(incr)
			}
			if field {
				f := r.get("field")
				if f == "" {
					f = "field"
				}
				return nil, []string{r.get("key"), f, incr}, true
			}
			return nil, []string{r.get("key"), incr}, true
		}}
}

var zincrby = Member{Command: "ZINCRBY", Type: "zset",
	read: func(a []string) (roles, bool) {
		if len(a) != 3 {
			return roles{}, false
		}
		return role("key", a[0], "incr", a[1], "field", a[2]), true
	},
	write: func(r roles) ([][]string, []string, bool) {
		f := r.get("field")
		if f == "" {
			f = "field"
		}
		return nil, []string{r.get("key"), r.get("incr"), f}, true
	}}

func unitIncr(name, by string) Member {
	return Member{Command: name, Type: "string",
		read: func(a []string) (roles, bool) {
			if len(a) != 1 {
				return roles{}, false
			}
			return role("key", a[0], "incr", by), true
		},
		write: func(r roles) ([][]string, []string, bool) {
			return nil, []string{r.get("key")}, r.get("incr") == by
		}}
}

// negate is an increment negated: "-3" for "3", "3" for "-3"; other
// text unchanged.
func negate(s string) string {
	if strings.HasPrefix(s, "-") {
		return s[1:]
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil && s != "" {
		return "-" + s
	}
	return s
}

// Expiry setters: the key, the time in the member's unit, and the value
// when the command stores one. Seconds and milliseconds convert (×1000,
// ÷1000 rounded up); a generator has no clock, so a relative time made
// absolute is 4102444800 s (2100-01-01) and an absolute one made relative
// is 100 s. An expiry that does not store a value is sent after SET of
// the value, when the command had one.
func expireMember(name, unit string) Member {
	return Member{Command: name,
		read: func(a []string) (roles, bool) {
			if len(a) < 2 {
				return roles{}, false
			}
			return roles{m: map[string]string{"key": a[0], "time": a[1], "unit": unit}, rest: a[2:]}, true
		},
		write: func(r roles) ([][]string, []string, bool) {
			t, ok := convertTime(r.get("time"), r.get("unit"), unit)
			return valueSetup(r), []string{r.get("key"), t}, ok
		}}
}

func valueSetup(r roles) [][]string {
	if v, ok := r.m["value"]; ok {
		return [][]string{{"SET", r.get("key"), v}}
	}
	return nil
}

var expireTokens = map[string]string{"EX": "s", "PX": "ms", "EXAT": "unix-s", "PXAT": "unix-ms"}
var unitTokens = map[string]string{"s": "EX", "ms": "PX", "unix-s": "EXAT", "unix-ms": "PXAT"}

// expireOption finds EX/PX/EXAT/PXAT and its time among a's options.
func expireOption(a []string) (unit, time string, ok bool) {
	for i := 0; i+1 < len(a); i++ {
		if u, ok := expireTokens[strings.ToUpper(a[i])]; ok {
			return u, a[i+1], true
		}
	}
	return "", "", false
}

var setExpire = Member{Command: "SET",
	read: func(a []string) (roles, bool) {
		if len(a) < 4 {
			return roles{}, false
		}
		u, t, ok := expireOption(a[2:])
		return role("key", a[0], "value", a[1], "unit", u, "time", t), ok
	},
	write: func(r roles) ([][]string, []string, bool) {
		v, ok := r.m["value"]
		if !ok {
			v = "value"
		}
		return nil, []string{r.get("key"), v, unitTokens[r.get("unit")], r.get("time")}, true
	}}

func setexMember(name, unit string) Member {
	return Member{Command: name,
		read: func(a []string) (roles, bool) {
			if len(a) != 3 {
				return roles{}, false
			}
			return role("key", a[0], "time", a[1], "unit", unit, "value", a[2]), true
		},
		write: func(r roles) ([][]string, []string, bool) {
			t, ok := convertTime(r.get("time"), r.get("unit"), unit)
			v, has := r.m["value"]
			if !has {
				v = "value"
			}
			return nil, []string{r.get("key"), t, v}, ok
		}}
}

var getex = Member{Command: "GETEX",
	read: func(a []string) (roles, bool) {
		if len(a) < 3 {
			return roles{}, false
		}
		u, t, ok := expireOption(a[1:])
		return role("key", a[0], "unit", u, "time", t), ok
	},
	write: func(r roles) ([][]string, []string, bool) {
		return valueSetup(r), []string{r.get("key"), unitTokens[r.get("unit")], r.get("time")}, true
	}}

// convertTime converts an expiry time between units: "s", "ms"
// (relative), "unix-s", "unix-ms" (absolute).
func convertTime(t, from, to string) (string, bool) {
	if from == to {
		return t, true
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return t, true // not a number: kept as it was, the build answers it
	}
	abs := func(u string) bool { return strings.HasPrefix(u, "unix-") }
	ms := func(u string) bool { return strings.HasSuffix(u, "ms") }
	if abs(from) != abs(to) {
		if abs(to) {
			n, from = 4102444800, "unix-s"
		} else {
			n, from = 100, "s"
		}
	}
	switch {
	case ms(from) && !ms(to):
		n = (n + 999) / 1000
		if n < 0 {
			n = -((-n + 999) / 1000)
		}
	case !ms(from) && ms(to):
		if n > 1<<53 || n < -(1<<53) {
			return "", false
		}
		n *= 1000
	}
	return strconv.FormatInt(n, 10), true
}

// Pops: the key (the first, for a command of several), the count when
// there is one, and the end: left (LPOP, ZPOPMIN, SPOP) or right, which
// LMPOP, BLMPOP, ZMPOP and BZMPOP are given (LEFT or MIN, RIGHT or MAX);
// every other pop takes its own end. A blocking pop waits 0.1 s; the
// LMPOP forms name one key. A count is dropped where a member takes none.
func popMember(name, typ, end string) Member {
	return Member{Command: name, Type: typ,
		read: func(a []string) (roles, bool) {
			switch len(a) {
			case 1:
				return role("key", a[0], "end", end), true
			case 2:
				return role("key", a[0], "end", end, "count", a[1]), true
			}
			return roles{}, false
		},
		write: func(r roles) ([][]string, []string, bool) {
			if c := r.get("count"); c != "" {
				return nil, []string{r.get("key"), c}, true
			}
			return nil, []string{r.get("key")}, true
		}}
}

func bpopMember(name, typ, end string) Member {
	return Member{Command: name, Type: typ,
		read: func(a []string) (roles, bool) {
			if len(a) < 2 {
				return roles{}, false
			}
			return role("key", a[0], "end", end), true
		},
		write: func(r roles) ([][]string, []string, bool) {
			return nil, []string{r.get("key"), "0.1"}, true
		}}
}

func mpopMember(name, typ string, blocking bool) Member {
	ends := map[string]string{"LEFT": "left", "RIGHT": "right", "MIN": "left", "MAX": "right"}
	words := map[string]string{"left": "LEFT", "right": "RIGHT"}
	if typ == "zset" {
		words = map[string]string{"left": "MIN", "right": "MAX"}
	}
	return Member{Command: name, Type: typ,
		read: func(a []string) (roles, bool) {
			if blocking {
				if len(a) < 1 {
					return roles{}, false
				}
				a = a[1:]
			}
			if len(a) < 3 {
				return roles{}, false
			}
			n, err := strconv.Atoi(a[0])
			if err != nil || n < 1 || n+1 >= len(a) {
				return roles{}, false
			}
			end, ok := ends[strings.ToUpper(a[n+1])]
			if !ok {
				return roles{}, false
			}
			r := role("key", a[1], "end", end)
			if rest := a[n+2:]; len(rest) == 2 && strings.EqualFold(rest[0], "COUNT") {
				r = r.with("count", rest[1])
			}
			return r, true
		},
		write: func(r roles) ([][]string, []string, bool) {
			args := []string{"1", r.get("key"), words[r.get("end")]}
			if c := r.get("count"); c != "" {
				args = append(args, "COUNT", c)
			}
			if blocking {
				args = append([]string{"0.1"}, args...)
			}
			return nil, args, true
		}}
}

// Range readers by index: the key, the start and the stop, kept.
func rangeMember(name, typ string) Member {
	return Member{Command: name, Type: typ,
		read: func(a []string) (roles, bool) {
			if len(a) != 3 {
				return roles{}, false
			}
			return role("key", a[0], "start", a[1], "stop", a[2]), true
		},
		write: func(r roles) ([][]string, []string, bool) {
			return nil, []string{r.get("key"), r.get("start"), r.get("stop")}, true
		}}
}

// Kin is a request's command, upper case, and the members of its family
// (itself included; itself alone when it has none) (kavach.Abilities.Kin).
func (Integration) Kin(request []byte) (string, []string) {
	c, err := ParseCommand(request)
	if err != nil || c.Name == "" {
		return "", nil
	}
	f, ok := FamilyOf(c.Name)
	if !ok {
		return c.Name, []string{c.Name}
	}
	family := []string{}
	for _, m := range f.Members {
		if !slices.Contains(family, m.Command) {
			family = append(family, m.Command)
		}
	}
	if !slices.Contains(family, c.Name) {
		family = append(family, c.Name)
	}
	return c.Name, family
}

// SetsState tells the requests that set state no key names: of their
// connection, SELECT, AUTH, HELLO, RESET, READONLY, READWRITE, the CLIENT
// subcommands that change how the connection is answered (REPLY,
// SETNAME, SETINFO, TRACKING, CACHING, NO-EVICT, NO-TOUCH) and the
// transaction's frame (MULTI, EXEC, DISCARD: a write queued between them
// runs at EXEC); of the server, the scripts and functions loaded (SCRIPT
// LOAD, FUNCTION LOAD, FUNCTION RESTORE), which EVALSHA and FCALL on any
// connection run.
func (Integration) SetsState(request []byte) kavach.StateScope {
	c, err := ParseCommand(request)
	if err != nil || c.Name == "" {
		return kavach.NoState
	}
	sub := ""
	if len(c.Args) > 1 {
		sub = strings.ToUpper(string(c.Args[1]))
	}
	switch c.Name {
	case "SELECT", "AUTH", "HELLO", "RESET", "READONLY", "READWRITE", "MULTI", "EXEC", "DISCARD":
		return kavach.ConnState
	case "CLIENT":
		switch sub {
		case "REPLY", "SETNAME", "SETINFO", "TRACKING", "CACHING", "NO-EVICT", "NO-TOUCH":
			return kavach.ConnState
		}
	case "SCRIPT":
		if sub == "LOAD" {
			return kavach.ServerState
		}
	case "FUNCTION":
		if sub == "LOAD" || sub == "RESTORE" {
			return kavach.ServerState
		}
	}
	return kavach.NoState
}
