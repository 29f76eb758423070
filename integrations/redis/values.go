package redis

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kavach-dev/kavach"
)

// valueArgs bounds how many arguments of one request get value variants
// (the first ones, in order): each gets tens, and a request of thousands
// of numbers must not give hundreds of thousands of candidates.
const valueArgs = 16

// wideRequest is the size past which a request's value and type
// substitutions leave their Request to be made (kavach.FieldEdit says
// which argument they set): tens of copies of a request of many
// megabytes are not made for the few variants the budget keeps.
const wideRequest = 4096

// Values are the request with one value varied inside its argument:
//
//   - number-form: an argument that is a number (COMMAND DOCS types it
//     integer, double or unix-time, or it is written as one; a script's
//     ARGV too, not its numkeys) in other forms and ranges: the same value
//     written another way, fractions, exponents, values only a float
//     holds, negative zero, a leading +, inf and nan where the grammar
//     says double, and the integer boundaries;
//   - structured: a stream id's ms and seq parts each to their
//     boundaries, and its other forms (*, -, +, incomplete, exclusive);
//     score range bounds (exclusive, infinite); lexicographic range bounds
//     ([, (, -, +); bit and byte offsets (the other unit, a byte's edges,
//     past the largest); durations of expiries (zero, negative, the other
//     unit, past what milliseconds hold); Unix times (past, now, far
//     future);
//   - script-site: a call site of an EVAL's script or a FUNCTION LOAD's
//     library (redis.call('HINCRBY', ...)) calling another command of its
//     family, a read for a write and a write for a read (lua.go);
//   - runner: an EVAL's script run through EVALSHA, FCALL and the other
//     runners, after the SCRIPT LOAD or FUNCTION LOAD they need.
//
// The variants of one kind are one group for sampling (as a request's
// removed fields are), interleaved: each argument, and each group of
// forms within it (the same value written otherwise, fractions, ...; a
// stream id's ms part, its seq part, ...), has its first before any has
// its second, so a budget that keeps a few sees different things.
//
// Without a learned schema, only numbers written as numbers and values
// whose command and shape say what they are (a stream id with its dash,
// a score or lex bound by position) are varied.
func (Integration) Values(request []byte, schema kavach.Schema, at time.Time) []kavach.Substitution {
	return valuesAfter(request, nil, schema, at)
}

// valuesAfter are Values of a request sent after earlier (After): an
// EVALSHA's or FCALL's script is looked for in them.
func valuesAfter(request []byte, earlier [][]byte, schema kavach.Schema, at time.Time) []kavach.Substitution {
	c, err := ParseCommand(request)
	if err != nil || c.Name == "" || len(c.Args) < 2 {
		return nil
	}
	args := make([]string, len(c.Args)-1)
	for i, a := range c.Args[1:] {
		args[i] = string(a)
	}
	specs := argTypes(c.Name, args, schema)
	// Each kind's variants, argument by argument, are interleaved: every
	// argument gets its first before any gets its second.
	perArg := map[string][][]kavach.Substitution{}
	emit := func(i int, kind string, forms []form) {
		label := argLabel(c.Name, args, i, specs[i])
		var subs []kavach.Substitution
		for _, f := range interleave(forms, args[i]) {
			sub := kavach.Substitution{Kind: kind, Group: "the request's values", Part: f.group, Edit: &kavach.FieldEdit{Field: i, Value: f.value},
				What: fmt.Sprintf("%s %s → %s (%s)", label, strconv.Quote(args[i]), strconv.Quote(f.value), f.what)}
			if len(request) <= wideRequest {
				b := make([][]byte, len(c.Args))
				copy(b, c.Args)
				b[i+1] = []byte(f.value)
				sub.Request = AppendCommand(nil, b...)
			}
			subs = append(subs, sub)
		}
		if len(subs) > 0 {
			perArg[kind] = append(perArg[kind], subs)
		}
	}
	varied := 0
	for i, a := range args {
		if varied >= valueArgs {
			break
		}
		sp := specs[i]
		if sp.Type == "key" || sp.Type == "pure-token" {
			continue
		}
		n := len(perArg["structured"]) + len(perArg["number-form"])
		emit(i, "structured", structuredForms(c.Name, args, i, sp, at))
		if isNumberArg(c.Name, args, i, sp) {
			emit(i, "number-form", numberForms(a, sp.Type == "double"))
		}
		if len(perArg["structured"])+len(perArg["number-form"]) > n {
			varied++
		}
	}
	out := scriptVariants(c, earlier, schema)
	for _, kind := range []string{"number-form", "structured"} {
		lists := perArg[kind]
		for r, left := 0, true; left; r++ {
			left = false
			for _, l := range lists {
				if r < len(l) {
					out = append(out, l[r])
					left = true
				}
			}
		}
	}
	return out
}

// interleave orders forms so that every group of forms (the same value,
// fractions, ...; a stream id's ms part, its seq part, ...) has its first
// before any has its second: when the budget keeps a few variants of an
// argument, they are of different kinds. Forms equal to the recorded
// value, and repeats, are left out.
func interleave(forms []form, recorded string) []form {
	var groups []string
	by := map[string][]form{}
	seen := map[string]bool{recorded: true}
	for _, f := range forms {
		if seen[f.value] {
			continue
		}
		seen[f.value] = true
		if by[f.group] == nil {
			groups = append(groups, f.group)
		}
		by[f.group] = append(by[f.group], f)
	}
	var out []form
	for r := 0; len(out) < len(seen)-1; r++ {
		for _, g := range groups {
			if r < len(by[g]) {
				out = append(out, by[g][r])
			}
		}
	}
	return out
}

// argTypes are the documented specs of each argument, as the grammar
// (COMMAND DOCS, matched in order) places them, and keys where COMMAND
// INFO places them; a zero spec where neither says.
func argTypes(name string, args []string, schema kavach.Schema) []ArgSpec {
	out := make([]ArgSpec, len(args))
	l, ok := schema.(*Learned)
	if !ok || l == nil {
		return out
	}
	if parts, ok := match(l.Args[name], args); ok {
		for _, p := range parts {
			sp := p.spec
			if !p.present || sp.Type == "block" || sp.Type == "oneof" {
				continue
			}
			for _, r := range p.reps {
				if sp.Type == "pure-token" {
					out[r[0]] = *sp
					continue
				}
				if sp.Token != "" && r[1]-r[0] == 2 {
					out[r[0]] = ArgSpec{Name: sp.Token, Type: "pure-token"}
				}
				out[r[1]-1] = *sp
			}
		}
	}
	for _, p := range keysAt(l, append([]string{name}, args...)) {
		out[p] = ArgSpec{Name: out[p].Name, Type: "key"}
	}
	// A script runner's grammar (keys, then args, both optional and
	// repeated) cannot tell keys from ARGV: numkeys does.
	if scriptRunners[name] {
		for i := 2; i < len(args); i++ {
			out[i] = ArgSpec{Name: "key", Type: "key"}
			if argv(name, args, i) > 0 {
				out[i] = ArgSpec{Name: "arg", Type: "string"}
			}
		}
	}
	return out
}

// scriptRunners take a script (or a function) and numkeys, then keys,
// then ARGV.
var scriptRunners = map[string]bool{"EVAL": true, "EVALSHA": true, "EVAL_RO": true, "EVALSHA_RO": true, "FCALL": true, "FCALL_RO": true}

// argv is the ARGV index (from 1) of argument i of a script runner, 0 for
// the script, numkeys and keys (and when numkeys is not a count).
func argv(name string, args []string, i int) int {
	if !scriptRunners[name] || len(args) < 2 {
		return 0
	}
	nk, err := strconv.Atoi(args[1])
	if err != nil || nk < 0 || i < 2+nk {
		return 0
	}
	return i - 1 - nk
}

func argLabel(name string, args []string, i int, sp ArgSpec) string {
	if j := argv(name, args, i); j > 0 {
		return fmt.Sprintf("argument %d (ARGV[%d])", i+1, j)
	}
	if sp.Name != "" {
		return fmt.Sprintf("argument %d (%s)", i+1, sp.Name)
	}
	return fmt.Sprintf("argument %d", i+1)
}

// isNumberArg says whether argument i is a number: typed integer, double
// or unix-time by the grammar, or written as a decimal number where the
// grammar says no more than string (or nothing). A script's ARGV counts;
// its script, numkeys and keys do not.
func isNumberArg(name string, args []string, i int, sp ArgSpec) bool {
	if scriptRunners[name] {
		if argv(name, args, i) == 0 {
			return false
		}
		sp = ArgSpec{}
	}
	switch sp.Type {
	case "integer", "double", "unix-time":
		return true
	case "", "string":
		_, ok := ParseNumber(args[i])
		return ok
	}
	return false
}

// form is one varied value: the value, what it is for a person, and the
// group of forms it belongs to (for sampling).
type form struct{ value, what, group string }

// integerBoundaries are the integer ranges' edges: 0, ±1, 2^31±1, 2^32,
// 2^53 (the last integer every double holds exactly, and one past it),
// 2^63-1 and -2^63, and one past each end of 64 bits.
var integerBoundaries = []struct{ value, what string }{
	{"0", "zero"}, {"1", "one"}, {"-1", "minus one"},
	{"2147483647", "2^31-1"}, {"2147483648", "2^31"}, {"2147483649", "2^31+1"},
	{"-2147483648", "-2^31"}, {"-2147483649", "-2^31-1"},
	{"4294967296", "2^32"}, {"9007199254740992", "2^53"}, {"9007199254740993", "2^53+1, which a double rounds"},
	{"9223372036854775807", "2^63-1"}, {"-9223372036854775808", "-2^63"},
	{"9223372036854775808", "2^63, past 64-bit signed"}, {"18446744073709551616", "2^64, past 64 bits"},
}

// numberForms are the other forms and ranges of the number v: the same
// value written other ways first, then fractions, exponents, values only
// a float holds, zero and signs, inf and nan (when float: the grammar
// says double), and the integer boundaries. Forms keep v's sign, where
// the incident is.
func numberForms(v string, float bool) []form {
	var out []form
	add := func(group, value, what string) { out = append(out, form{value, what, group}) }
	n, ok := ParseNumber(v)
	sign := ""
	if ok && n.Sign == "-" {
		sign = "-"
	}
	if ok {
		mag := n
		mag.Sign = ""
		switch {
		case n.Integer():
			add("same value", n.String()+".0", "the same value with a fraction")
			add("same value", n.String()+"e0", "the same value with an exponent")
			add("same value", n.Sign+"0"+n.Int, "the same value with a leading zero")
			if n.Sign == "" {
				add("same value", "+"+n.Int, "the same value with a leading +")
			}
			add("fraction", sign+n.Int+".5", "half past it")
			if m := addDigits(n.Int, -1); m != "" {
				add("fraction", sign+m+".5", "half before it")
			}
		case n.Exp == "":
			add("same value", n.String()+"0", "the same value with a trailing zero")
			if d := strings.TrimLeft(n.Int+n.Frac, "0"); d != "" {
				add("same value", fmt.Sprintf("%s%se-%d", n.Sign, d, len(n.Frac)), "the same value with an exponent")
			}
			if n.Int != "" {
				add("fraction", sign+n.Int, "its integer part")
			}
			add("fraction", sign+n.Int+"."+n.Frac+"1", "one more digit")
		default:
			add("same value", strings.ToUpper(n.String()), "the same value, the exponent in capitals")
		}
	}
	add("exponent", sign+"1e3", "an exponent")
	add("exponent", sign+"2.5e+10", "an exponent with a sign")
	add("exponent", sign+"1e-3", "a negative exponent")
	add("float only", sign+"1e300", "past every integer type")
	add("float only", sign+"0.1", "a fraction no binary float holds exactly")
	add("float only", sign+"1e400", "past a double (a long double holds it)")
	add("float only", "5e-324", "the smallest double")
	add("zero and sign", "-0", "negative zero")
	add("zero and sign", "-0.0", "negative zero with a fraction")
	if float {
		add("inf and nan", "inf", "infinity")
		add("inf and nan", "-inf", "negative infinity")
		add("inf and nan", "+inf", "infinity with a sign")
		add("inf and nan", "nan", "not a number")
	}
	for _, b := range integerBoundaries {
		add("range", b.value, b.what)
	}
	return out
}

// structuredForms are the varied values of argument i when it has parts
// or a meaning with edges of its own: a stream id, a score or lex range
// bound, a bit or byte offset, a duration, a Unix time.
func structuredForms(name string, args []string, i int, sp ArgSpec, at time.Time) []form {
	a := args[i]
	switch role := roleOf(name, args, i, sp); role {
	case "stream-id":
		if id, ok := ParseStreamID(a); ok {
			return streamIDForms(id)
		}
	case "score-bound":
		if b, ok := ParseScoreBound(a); ok {
			return scoreBoundForms(b, args, i)
		}
	case "lex-bound":
		if b, ok := ParseLexBound(a); ok {
			return lexBoundForms(b)
		}
	case "bit-offset", "byte-offset":
		if n, ok := ParseNumber(a); ok && n.Integer() {
			return offsetForms(name, a, role == "bit-offset")
		}
	case "seconds", "milliseconds":
		if n, ok := ParseNumber(a); ok && n.Integer() {
			return durationForms(a, role == "milliseconds")
		}
	case "unix-time":
		if n, ok := ParseNumber(a); ok && n.Integer() {
			return unixTimeForms(strings.Contains(sp.Name, "milli"), at)
		}
	}
	return nil
}

// roleOf says what structured value argument i is, from its command and
// position (and, where known, its documented name and type): "stream-id",
// "score-bound", "lex-bound", "bit-offset", "byte-offset", "seconds",
// "milliseconds", "unix-time", or "".
func roleOf(name string, args []string, i int, sp ArgSpec) string {
	has := func(token string) bool {
		for _, a := range args {
			if strings.EqualFold(a, token) {
				return true
			}
		}
		return false
	}
	switch name {
	case "ZCOUNT", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE", "ZREMRANGEBYSCORE":
		if i == 1 || i == 2 {
			return "score-bound"
		}
	case "ZLEXCOUNT", "ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZREMRANGEBYLEX":
		if i == 1 || i == 2 {
			return "lex-bound"
		}
	case "ZRANGE", "ZRANGESTORE":
		first := 1
		if name == "ZRANGESTORE" {
			first = 2
		}
		if i == first || i == first+1 {
			switch {
			case has("BYSCORE"):
				return "score-bound"
			case has("BYLEX"):
				return "lex-bound"
			}
		}
	case "SETBIT", "GETBIT":
		if i == 1 {
			return "bit-offset"
		}
	case "SETRANGE":
		if i == 1 {
			return "byte-offset"
		}
	case "GETRANGE":
		if i == 1 || i == 2 {
			return "byte-offset"
		}
	case "BITCOUNT", "BITPOS":
		first := 1
		if name == "BITPOS" {
			first = 2
		}
		if i == first || i == first+1 {
			if has("BIT") && !(name == "BITPOS" && strings.EqualFold(args[1], "BIT")) {
				return "bit-offset"
			}
			return "byte-offset"
		}
	case "SET", "GETEX", "EXPIRE", "PEXPIRE", "SETEX", "PSETEX", "EXPIREAT", "PEXPIREAT":
		switch {
		case sp.Type == "unix-time":
			return "unix-time"
		case sp.Type == "integer" && (sp.Name == "seconds" || sp.Name == "milliseconds"):
			return sp.Name
		}
	}
	if strings.HasPrefix(name, "X") && sp.Type != "integer" {
		id, ok := ParseStreamID(args[i])
		named := sp.Name == "id" || sp.Name == "start" || sp.Name == "end" || sp.Name == "threshold" || sp.Name == "last-id"
		// Documented names say which arguments are ids; without them, an
		// id written with its dash is one.
		if ok && (named || sp.Name == "" && id.Dash) {
			return "stream-id"
		}
	}
	return ""
}

// streamPartEdges are the values a stream id part is taken to, the
// largest first (where overflows live): 2^64-1, 0, one past 64 bits, the
// signed edge 2^63 and 2^63-1, and 1.
var streamPartEdges = []struct{ value, what string }{
	{"18446744073709551615", "2^64-1, the largest"}, {"0", "zero"}, {"18446744073709551616", "2^64, past the largest"},
	{"9223372036854775808", "2^63, past 64-bit signed"}, {"9223372036854775807", "2^63-1"}, {"1", "one"},
}

// streamIDForms vary a stream id part by part: its ms part to the edges
// and its neighbours with seq kept, then seq alike with ms kept; then the
// other forms: auto (*), the range ends (-, +), incomplete ids (ms alone,
// ms-*, ms-), and the id exclusive (or inclusive).
func streamIDForms(id StreamID) []form {
	var out []form
	part := func(group string, set func(*StreamID, string), from string) {
		for _, e := range streamPartEdges {
			v := id
			set(&v, e.value)
			out = append(out, form{v.String(), group + " part " + e.what, group})
		}
		for _, d := range []int64{1, -1} {
			if x := addDigits(from, d); x != "" {
				v := id
				set(&v, x)
				out = append(out, form{v.String(), fmt.Sprintf("%s part %+d", group, d), group})
			}
		}
	}
	if id.Special == "" {
		part("ms", func(v *StreamID, s string) { v.MS = s }, id.MS)
		if id.Dash && id.Seq != "*" {
			part("seq", func(v *StreamID, s string) { v.Seq = s }, id.Seq)
		} else {
			v := id
			v.Dash, v.Seq = true, "0"
			out = append(out, form{v.String(), "seq part given", "seq"})
			v.Seq = "18446744073709551615"
			out = append(out, form{v.String(), "seq part given, the largest", "seq"})
		}
	}
	for _, s := range []string{"*", "-", "+"} {
		out = append(out, form{s, "the special id " + s, "form"})
	}
	if id.Special == "" {
		out = append(out, form{id.MS, "incomplete: the ms part alone", "form"})
		out = append(out, form{id.MS + "-*", "incomplete: the seq part auto", "form"})
		out = append(out, form{id.MS + "-", "incomplete: a dash, no seq part", "form"})
		if id.Dash && id.Seq != "*" {
			out = append(out, form{"-" + id.Seq, "incomplete: no ms part", "form"})
		}
		v := id
		v.Exclusive = !v.Exclusive
		what := "exclusive"
		if !v.Exclusive {
			what = "inclusive"
		}
		out = append(out, form{v.String(), what, "form"})
	}
	return out
}

// scoreBoundForms vary a score range bound: exclusive toggled, the
// infinities (inclusive and exclusive), the other bound's value, and the
// value in another form (an exponent, a fraction past it).
func scoreBoundForms(b ScoreBound, args []string, i int) []form {
	var out []form
	t := b
	t.Exclusive = !t.Exclusive
	out = append(out, form{t.String(), "exclusive toggled", "bound"})
	for _, inf := range []string{"-inf", "+inf", "inf", "(-inf", "(+inf"} {
		out = append(out, form{inf, "an infinite bound", "infinity"})
	}
	other := 3 - i // the other bound of (1, 2) in ZCOUNT-like commands
	if other >= 0 && other < len(args) {
		if o, ok := ParseScoreBound(args[other]); ok {
			v := b
			v.Value = o.Value
			out = append(out, form{v.String(), "the other bound's value", "bound"})
		}
	}
	if n, ok := ParseNumber(b.Value); ok {
		v := b
		v.Value = n.String() + "e0"
		if !n.Integer() && n.Exp != "" {
			v.Value = strings.ToUpper(n.String())
		}
		out = append(out, form{v.String(), "the same value with an exponent", "value"})
		v.Value = n.String() + "1"
		if n.Integer() {
			v.Value = n.String() + ".5"
		}
		out = append(out, form{v.String(), "a fraction past the value", "value"})
	}
	return out
}

// lexBoundForms vary a lexicographic bound: inclusive and exclusive
// swapped, the open ends - and +, an empty member, and a member just
// past it.
func lexBoundForms(b LexBound) []form {
	var out []form
	switch b.Open {
	case '[':
		out = append(out, form{"(" + b.Member, "exclusive instead of inclusive", "bound"})
	case '(':
		out = append(out, form{"[" + b.Member, "inclusive instead of exclusive", "bound"})
	}
	out = append(out, form{"-", "before every member", "open end"}, form{"+", "after every member", "open end"})
	out = append(out, form{"[", "an empty member, inclusive", "member"}, form{"(", "an empty member, exclusive", "member"})
	if b.Open == '[' || b.Open == '(' {
		out = append(out, form{string(b.Open) + b.Member + "\x00", "a member just past it", "member"},
			form{string(b.Open) + b.Member + "\xff", "a member past every member it starts", "member"})
	}
	return out
}

// offsetForms vary a bit or byte offset: the same place in the other
// unit, the edges of its byte, the largest offset a string holds (for a
// read; a write there would take 512 MB, so writes get the first offset
// past it), and -1.
func offsetForms(name, v string, bits bool) []form {
	var out []form
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	write := name == "SETBIT" || name == "SETRANGE"
	if bits {
		out = append(out, form{strconv.FormatInt(n/8, 10), "the same place in bytes", "unit"})
		out = append(out, form{strconv.FormatInt(n|7, 10), "the last bit of its byte", "edge"})
		out = append(out, form{strconv.FormatInt(n&^7, 10), "the first bit of its byte", "edge"})
		out = append(out, form{strconv.FormatInt((n|7)+1, 10), "the first bit of the next byte", "edge"})
		if !write {
			out = append(out, form{"4294967295", "the largest bit offset", "range"})
		}
		out = append(out, form{"4294967296", "past the largest bit offset", "range"})
	} else {
		if n <= 1<<59 && n >= -(1<<59) {
			out = append(out, form{strconv.FormatInt(n*8, 10), "the same place in bits", "unit"})
		}
		if !write {
			out = append(out, form{"536870911", "the last byte of the largest string", "range"})
		}
		out = append(out, form{"536870912", "past the largest string", "range"})
	}
	out = append(out, form{"-1", "minus one", "range"})
	return out
}

// durationForms vary an expiry's duration: zero, one, negative, the same
// amount taken in the other unit, a year, and the largest a millisecond
// count holds and one past it.
func durationForms(v string, ms bool) []form {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	out := []form{{"0", "no time", "edge"}, {"1", "the shortest", "edge"}, {"-1", "negative", "edge"}}
	year := int64(365 * 24 * 3600)
	if ms {
		out = append(out, form{strconv.FormatInt(n/1000, 10), "its seconds, taken as milliseconds", "unit"})
		out = append(out, form{strconv.FormatInt(year*1000, 10), "a year", "range"})
		out = append(out, form{"9223372036854775807", "the largest a millisecond count holds", "range"})
	} else {
		if n <= 9223372036854775 && n >= -9223372036854775 {
			out = append(out, form{strconv.FormatInt(n*1000, 10), "its milliseconds, taken as seconds", "unit"})
		}
		out = append(out, form{strconv.FormatInt(year, 10), "a year", "range"})
		out = append(out, form{"9223372036854775", "the largest whose milliseconds fit 64 bits", "range"})
		out = append(out, form{"9223372036854776", "past what milliseconds hold", "range"})
	}
	return out
}

// unixTimeForms vary a Unix time: the past (the epoch's first second,
// 2000), now as the build sees it (when known) and a second either side,
// the far future (2100, the year 9999) and past what 64 bits hold.
func unixTimeForms(ms bool, at time.Time) []form {
	unit := func(sec int64) string {
		if ms {
			return strconv.FormatInt(sec*1000, 10)
		}
		return strconv.FormatInt(sec, 10)
	}
	out := []form{{unit(1), "the past: 1970", "past"}, {unit(946684800), "the past: 2000", "past"}}
	if !at.IsZero() {
		now := at.Unix()
		out = append(out, form{unit(now), "now, as the build sees it", "now"},
			form{unit(now - 1), "a second ago", "now"}, form{unit(now + 1), "in a second", "now"})
	}
	out = append(out, form{unit(4102444800), "the far future: 2100", "future"}, form{unit(253402300799), "the far future: the end of 9999", "future"},
		form{"9223372036854775807", "the largest 64 bits hold", "future"})
	return out
}
