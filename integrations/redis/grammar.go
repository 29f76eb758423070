package redis

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kavach-dev/kavach"
)

// A part is where one argument spec of the grammar matched a request's
// arguments: [start, end) among the arguments after the command's name
// (start == end where an optional part is absent). For a oneof, alt is
// the alternative taken; for a repeated part, reps are the ranges of its
// repetitions.
type part struct {
	spec       *ArgSpec
	start, end int
	present    bool
	alt        int
	reps       [][2]int
	repl       *repList // reps while matching
}

// matchBudget bounds the matcher's work on one request: a grammar with
// many optional and repeated parts may give many ways to try, and bad
// input must not hang.
const matchBudget = 20000

type matcher struct {
	args []string
	left int
	// tokens are the grammar's tokens, upper-cased: a repeated value
	// (keys, members) stops before one of them before it takes it as one
	// more value, so that ZUNIONSTORE d 2 a b WEIGHTS 1 2 has two keys
	// and two weights, not five keys.
	tokens map[string]bool
}

// The matcher's parts and repetitions so far are persistent lists: one
// more is a new head sharing the rest, so that trying one more
// repetition, or backing off one, copies nothing, and matching a part
// repeated a thousand times costs a thousand steps, not a million.
type (
	// partList is parts in order, last first; a node is one part, or (sub
	// set) a whole list of parts appended at once.
	partList struct {
		prev *partList
		p    part
		sub  *partList
	}
	repList struct {
		prev *repList
		r    [2]int
		n    int
	}
)

func (l *partList) push(p part) *partList { return &partList{prev: l, p: p} }

func (l *partList) concat(sub *partList) *partList {
	if sub == nil {
		return l
	}
	return &partList{prev: l, sub: sub}
}

// flatten appends the list's parts to out, in order, each with its
// repetitions as a slice.
func (l *partList) flatten(out []part) []part {
	var nodes []*partList
	for ; l != nil; l = l.prev {
		nodes = append(nodes, l)
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		if n.sub != nil {
			out = n.sub.flatten(out)
			continue
		}
		p := n.p
		p.reps, p.repl = p.repl.slice(), nil
		out = append(out, p)
	}
	return out
}

func (l *repList) push(r [2]int) *repList {
	n := 1
	if l != nil {
		n = l.n + 1
	}
	return &repList{prev: l, r: r, n: n}
}

func (l *repList) slice() [][2]int {
	if l == nil {
		return nil
	}
	out := make([][2]int, l.n)
	for ; l != nil; l = l.prev {
		out[l.n-1] = l.r
	}
	return out
}

func addTokens(specs []ArgSpec, to map[string]bool) {
	for i := range specs {
		if specs[i].Token != "" {
			to[strings.ToUpper(specs[i].Token)] = true
		}
		addTokens(specs[i].Args, to)
	}
}

// match parses args with the grammar specs, in the documented order,
// the first parse found by trying each optional part present before
// absent and each repeated part as often as it goes. ok is false when
// the arguments do not follow the grammar in its order (Redis accepts
// some options in any order: SET key value GET NX): such a request gets
// no grammar variants.
func match(specs []ArgSpec, args []string) ([]part, bool) {
	m := &matcher{args: args, left: matchBudget, tokens: map[string]bool{}}
	addTokens(specs, m.tokens)
	var out []part
	ok := m.seq(specs, 0, 0, nil, func(i int, parts *partList) bool {
		if i != len(args) {
			return false
		}
		out = parts.flatten(nil)
		return true
	})
	return out, ok
}

// seq matches specs[k:] from argument i on, then calls cont with where it
// ended and the parts matched so far.
func (m *matcher) seq(specs []ArgSpec, k, i int, parts *partList, cont func(int, *partList) bool) bool {
	if m.left--; m.left < 0 {
		return false
	}
	if k == len(specs) {
		return cont(i, parts)
	}
	sp := &specs[k]
	if m.repeated(sp, i, i, nil, nil, -1, func(j int, reps *repList, inner *partList, alt int) bool {
		p := part{spec: sp, start: i, end: j, present: true, alt: alt, repl: reps}
		return m.seq(specs, k+1, j, parts.push(p).concat(inner), cont)
	}) {
		return true
	}
	if sp.Optional {
		return m.seq(specs, k+1, i, parts.push(part{spec: sp, start: i, end: i, alt: -1}), cont)
	}
	return false
}

// repeated matches one repetition of sp at i, then (for a repeated part)
// more, greedily, backing off when the rest does not match.
func (m *matcher) repeated(sp *ArgSpec, start, i int, reps *repList, inner *partList, alt int, cont func(int, *repList, *partList, int) bool) bool {
	withToken := reps == nil || sp.MultipleToken
	return m.one(sp, i, withToken, func(j int, in *partList, a int) bool {
		if j == i {
			return false // no progress: never loop
		}
		reps := reps.push([2]int{i, j})
		in = inner.concat(in)
		if reps.n == 1 {
			alt = a
		}
		// At a token of the grammar (not this part's own), the rest is
		// tried first, and the token taken as one more value only if the
		// rest does not parse.
		token := j < len(m.args) && m.tokens[strings.ToUpper(m.args[j])] && !strings.EqualFold(m.args[j], sp.Token)
		if sp.Multiple && !token && m.repeated(sp, start, j, reps, in, alt, cont) {
			return true
		}
		if cont(j, reps, in, alt) {
			return true
		}
		return sp.Multiple && token && m.repeated(sp, start, j, reps, in, alt, cont)
	})
}

// one matches a single occurrence of sp at argument i.
func (m *matcher) one(sp *ArgSpec, i int, withToken bool, cont func(int, *partList, int) bool) bool {
	if m.left--; m.left < 0 {
		return false
	}
	if sp.Token != "" && withToken {
		if i >= len(m.args) || !strings.EqualFold(m.args[i], sp.Token) {
			return false
		}
		i++
	}
	switch sp.Type {
	case "pure-token":
		return cont(i, nil, -1)
	case "block":
		return m.seq(sp.Args, 0, i, nil, func(j int, in *partList) bool { return cont(j, in, -1) })
	case "oneof":
		for a := range sp.Args {
			if m.seq(sp.Args[a:a+1], 0, i, nil, func(j int, in *partList) bool { return cont(j, in, a) }) {
				return true
			}
		}
		return false
	}
	if i >= len(m.args) || !valueFits(sp.Type, m.args[i]) {
		return false
	}
	return cont(i+1, nil, -1)
}

// valueFits says whether an argument can be a value of a documented type.
func valueFits(typ, a string) bool {
	switch typ {
	case "integer", "unix-time":
		_, err := strconv.ParseInt(a, 10, 64)
		return err == nil
	case "double":
		f, err := strconv.ParseFloat(a, 64)
		return err == nil && !math.IsNaN(f)
	}
	return true
}

// sample is a value for an argument a variant adds: realistic for its
// type; a key that does not exist for a key.
func sample(sp *ArgSpec) []string {
	var out []string
	if sp.Token != "" {
		out = append(out, sp.Token)
	}
	switch sp.Type {
	case "pure-token":
	case "block":
		for i := range sp.Args {
			if !sp.Args[i].Optional {
				out = append(out, sample(&sp.Args[i])...)
			}
		}
	case "oneof":
		if len(sp.Args) > 0 {
			out = append(out, sample(&sp.Args[0])...)
		}
	case "integer":
		out = append(out, "100")
	case "unix-time":
		out = append(out, "4102444800") // 2100-01-01, in seconds (or milliseconds: soon)
	case "double":
		out = append(out, "1.5")
	case "key":
		out = append(out, "kavach:missing-key")
	case "pattern":
		out = append(out, "*")
	default:
		out = append(out, "value")
	}
	return out
}

// Rewrites are the request with the grammar's other choices (COMMAND
// DOCS, taken whole): each oneof's other alternatives in place of the one
// taken (a token swapped for another of its group keeps its value: EX 10
// becomes PX 10); each optional part present dropped, each absent one
// added (a oneof, once with each alternative); each repeated part's last
// repetition repeated. A request that does not follow its grammar in the
// documented order gets none.
func (Integration) Rewrites(request []byte, schema kavach.Schema) []kavach.Substitution {
	l, ok := schema.(*Learned)
	if !ok || l == nil {
		return nil
	}
	c, err := ParseCommand(request)
	if err != nil || c.Name == "" || len(l.Args[c.Name]) == 0 {
		return nil
	}
	args := make([]string, len(c.Args)-1)
	for i, a := range c.Args[1:] {
		args[i] = string(a)
	}
	parts, ok := match(l.Args[c.Name], args)
	if !ok {
		return nil
	}
	var out []kavach.Substitution
	emit := func(at, end int, with []string, what string) {
		next := slices.Concat(args[:at], with, args[end:])
		b := make([][]byte, 0, len(next)+1)
		b = append(b, c.Args[0])
		for _, a := range next {
			b = append(b, []byte(a))
		}
		out = append(out, kavach.Substitution{Request: AppendCommand(nil, b...), What: what})
	}
	for _, p := range parts {
		sp := p.spec
		if p.present && sp.Type == "oneof" && p.alt >= 0 && len(p.reps) > 0 {
			r := p.reps[0]
			taken := &sp.Args[p.alt]
			for a := range sp.Args {
				if a == p.alt {
					continue
				}
				other := &sp.Args[a]
				with := sample(other)
				if taken.Token != "" && other.Token != "" && taken.Type != "pure-token" && other.Type != "pure-token" &&
					r[1]-r[0] == 2 && valueFits(other.Type, args[r[0]+1]) {
					with = []string{other.Token, args[r[0]+1]}
				}
				emit(r[0], r[1], with, fmt.Sprintf("%s → %s (another choice of %s)", show(args[r[0]:r[1]]), show(with), sp.Name))
			}
		}
		if p.present && sp.Optional {
			emit(p.start, p.end, nil, fmt.Sprintf("optional %s (%s) dropped", show(args[p.start:p.end]), sp.Name))
		}
		if !p.present && sp.Optional {
			alts := []*ArgSpec{sp}
			if sp.Type == "oneof" {
				alts = nil
				for a := range sp.Args {
					alts = append(alts, &sp.Args[a])
				}
			}
			for _, alt := range alts {
				with := sample(alt)
				if sp.Type == "oneof" && sp.Token != "" {
					with = append([]string{sp.Token}, with...)
				}
				emit(p.start, p.start, with, fmt.Sprintf("optional %s (%s) added", show(with), sp.Name))
			}
		}
		if p.present && sp.Multiple && len(p.reps) > 0 {
			r := p.reps[len(p.reps)-1]
			rep := args[r[0]:r[1]]
			if len(p.reps) == 1 && sp.Token != "" && !sp.MultipleToken {
				rep = rep[1:] // the token comes once
			}
			emit(r[1], r[1], rep, fmt.Sprintf("repeated %s (%s) once more", show(rep), sp.Name))
		}
	}
	return out
}

func show(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, " ")
}
