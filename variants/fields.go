package variants

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/kavach-dev/kavach"
)

// mutation is a request with one change, what the change was, and which
// part of the request it changed. An earlier step's mutations are made
// lazily: build makes the request and describe what changed, and id
// tells the mutation from the step's others (the field and its new
// value, or the field removed), so that no request is built, and no
// description written, for a variant the budget does not keep.
type mutation struct {
	request  []byte
	what     string
	group    string
	build    func() []byte
	describe func() string
	id       string
}

// fieldMutations changes each field of step n's request in turn (design
// §4, docs/design.md): numbers to boundaries, neighbours, signs and huge values; strings
// to empty, other values seen, a long value; keys to a missing key and
// other recorded keys; tokens to the other tokens; any field removed; and,
// when all is true, fields swapped with requests of the same kind.
func (g *gen) fieldMutations(n int, all bool) []mutation {
	if m, ok := g.mutations[n]; ok && !all {
		return m
	}
	m := g.makeFieldMutations(n, all)
	if !all {
		g.mutations[n] = m
	}
	return m
}

// fieldsOf is step n's request and its fields as the variator splits
// them; false when the request did not parse or does not split.
func (g *gen) fieldsOf(n int) (req kavach.Event, kind string, fields []kavach.Field, ok bool) {
	req = g.steps[n-1].Request
	if req.Flags&kavach.ParseError != 0 {
		return req, "", nil, false
	}
	kind, fields, ok = g.opts.Variator.Fields(req.Data, g.opts.Schema)
	return req, kind, fields, ok
}

// makeFieldMutations makes step n's field mutations, as fieldMutations
// describes them, every time it is called (fieldMutations keeps an
// earlier step's once made).
func (g *gen) makeFieldMutations(n int, all bool) []mutation {
	req, kind, fields, ok := g.fieldsOf(n)
	if !ok {
		return nil
	}
	// The failing request's mutations are built now (their bytes tell
	// duplicates, a removed flag and a grammar drop of it alike), unless
	// the request is so large that a copy per candidate would cost more
	// than exactCost bytes: then, as an earlier step's, they are built
	// lazily, told apart by the field and value they change (editID).
	eager := all && len(fields) <= exactFields && len(req.Data)*len(fields) <= exactCost
	if all && !eager {
		if g.wide == nil {
			g.wide = map[int][]kavach.Field{}
		}
		g.wide[n] = fields
	}
	vary := g.varied(n, len(fields))
	m := &fieldMutator{g: g, n: n, all: all, eager: eager, req: req, kind: kind, fields: fields, groups: make([]string, len(fields))}
	for i := range fields {
		m.groups[i] = "field " + strconv.Itoa(i)
		if !all {
			m.groups[i] = "step " + strconv.Itoa(n) + " field " + strconv.Itoa(i)
		}
	}
	for _, i := range vary {
		m.values(i)
	}
	m.removals(vary)
	if all {
		m.swaps(vary)
	}
	return m.out
}

// fieldMutator makes one request's field mutations (makeFieldMutations).
type fieldMutator struct {
	g      *gen
	n      int  // the step
	all    bool // the failing request: swaps too, and built now when eager
	eager  bool // built now, told apart by their bytes
	req    kavach.Event
	kind   string
	fields []kavach.Field
	groups []string // each field's group
	out    []mutation
}

// set adds the mutation that sets field i to value (from says where the
// value comes from, "" for none), unless value is the field's own.
func (m *fieldMutator) set(i int, value, from string) {
	g, fields := m.g, m.fields
	if value == fields[i].Value {
		return
	}
	describe := func() string {
		what := fmt.Sprintf("%s %s → %s", g.fieldName(i, fields[i]), quote(fields[i].Value), quote(value))
		if from != "" {
			what += ", " + from
		}
		return what
	}
	build := func() []byte {
		// In place and back, not on a copy: a wide request's fields
		// are many. Builds take turns (finish).
		old := fields[i].Value
		fields[i].Value = value
		defer func() { fields[i].Value = old }()
		return g.opts.Variator.Rebuild(m.req.Data, fields)
	}
	group := m.groups[i]
	if from != "" && strings.HasPrefix(from, "taken from") {
		group = "swap"
	}
	if m.eager {
		m.out = append(m.out, mutation{request: build(), what: describe(), group: group})
		return
	}
	m.out = append(m.out, mutation{group: group, build: build, describe: describe, id: strconv.Itoa(i) + "=" + value})
}

// values adds field i's mutations by its type: numbers to boundaries,
// neighbours, signs and huge values; strings to empty, long and the
// values seen; keys to a missing key and the keys seen; tokens to the
// other tokens; and a named field to the other types the recording
// shows it with.
func (m *fieldMutator) values(i int) {
	g, f := m.g, m.fields[i]
	switch f.Type {
	case kavach.FieldNumber:
		for _, v := range numbers(f.Value) {
			m.set(i, v, "")
		}
	case kavach.FieldString:
		// Empty and long first: the boundaries; then values seen.
		m.set(i, "", "")
		m.set(i, strings.Repeat("x", 4096), "")
		for _, s := range g.strings {
			m.set(i, s, "a value seen in the recording")
		}
	case kavach.FieldKey:
		missing, other := g.keyWords()
		m.set(i, MissingKey, missing)
		for _, k := range g.keys {
			m.set(i, k, other)
		}
	case kavach.FieldToken:
		for _, t := range f.Alternatives {
			m.set(i, t, "")
		}
	}
	// A named field (a query parameter, a JSON field) the recording
	// shows as a number in another request of its kind is varied as
	// a number too, and one it shows as text, as text.
	if f.Key == "" || (f.Type != kavach.FieldNumber && f.Type != kavach.FieldString) {
		return
	}
	for _, seen := range g.typedAs(m.kind, f.Key) {
		if seen.typ == f.Type {
			continue
		}
		from := fmt.Sprintf("typed as at step %d", seen.step)
		if seen.typ == kavach.FieldNumber {
			for _, v := range numbers(seen.value) {
				m.set(i, v, from)
			}
		} else {
			m.set(i, "", from)
			m.set(i, seen.value, from)
		}
	}
}

// removals adds the mutations that remove one of the fields vary.
func (m *fieldMutator) removals(vary []int) {
	g, fields := m.g, m.fields
	removed := "removed"
	if !m.all {
		removed = "step " + strconv.Itoa(m.n) + " removed"
	}
	for _, i := range vary {
		describe := func() string { return fmt.Sprintf("%s %s removed", g.fieldName(i, fields[i]), quote(fields[i].Value)) }
		build := func() []byte { return g.opts.Variator.Rebuild(m.req.Data, slices.Delete(slices.Clone(fields), i, i+1)) }
		switch {
		case m.eager:
			m.out = append(m.out, mutation{request: build(), what: describe(), group: removed})
		case m.all:
			// Removing any field of a run of equal ones makes the same
			// request: the run's first names them all.
			m.out = append(m.out, mutation{group: removed, build: build, describe: describe, id: "-" + strconv.Itoa(runStart(fields, i))})
		default:
			m.out = append(m.out, mutation{group: removed, build: build, describe: describe, id: "-" + strconv.Itoa(i)})
		}
	}
}

// swaps adds, for each field of vary, the mutations that set it to the
// same field's value in another request of the same kind and shape.
func (m *fieldMutator) swaps(vary []int) {
	for _, s := range m.g.steps {
		if s.N == m.n {
			continue
		}
		k2, f2, ok := m.g.opts.Variator.Fields(s.Request.Data, m.g.opts.Schema)
		if !ok || k2 != m.kind || len(f2) != len(m.fields) {
			continue
		}
		for _, i := range vary {
			m.set(i, f2[i].Value, fmt.Sprintf("taken from step %d", s.N))
		}
	}
}

// pickFields is how many fields of one request get field mutations at
// most, per variant of the budget. The budget keeps one mutation of a
// field before any field gets a second, and a request of thousands of
// arguments has far more fields than it has room for; the fields kept
// are a sample by the seed, as a uniform draw of the fields the budget
// keeps would be.
const pickFields = 4

// exactFields and exactCost bound what the failing request's mutations
// are built with before the budget chooses: its number of fields (each
// candidate copies them all), and its size times that number. Within
// both, each candidate is built and told from the others by its bytes;
// past either, each is told by the field and value it changes and built
// only when kept, so that generating stays linear in the request's size.
// Variables only so that a test can compare both ways on one request.
var (
	exactFields = 64
	exactCost   = 1 << 20
)

// varied are the indexes of the fields of step n's request (of count
// fields) that get mutations: all of them when they are at most
// pickFields × the budget, else that many drawn by the seed (and the
// step), in order.
func (g *gen) varied(n, count int) []int {
	k := pickFields * g.opts.Budget
	if count <= k {
		out := make([]int, count)
		for i := range out {
			out[i] = i
		}
		return out
	}
	rng := rand.New(rand.NewPCG(g.opts.Seed, 0x6669656c64^uint64(n)))
	out := rng.Perm(count)[:k]
	slices.Sort(out)
	return out
}

// runStart is the first field of the run of fields equal to field i.
func runStart(fields []kavach.Field, i int) int {
	for i > 0 && sameField(fields[i-1], fields[i]) {
		i--
	}
	return i
}

func sameField(a, b kavach.Field) bool {
	return a.Value == b.Value && a.Key == b.Key && a.Name == b.Name && a.Type == b.Type
}

// edited is the incident with step n's request mutated by m, made
// lazily and told from the others by what m changes (editKey): a wide
// request's mutation.
func (g *gen) edited(n int, m mutation) Variant {
	v := Variant{key: editKey(n, false, nil, m.id)}
	v.describe = func() string { return fmt.Sprintf("step %d: %s", n, m.describe()) }
	v.build = func() ([]kavach.Event, []int) {
		return g.withRequest(n, m.build(), "", false).build()
	}
	return v
}

// editKey tells a variant that sets (or removes) one field of step n's
// request, after inserting setup, from every other such variant.
func editKey(n int, regression bool, setup [][]byte, id string) [32]byte {
	return lazyKey(n, regression, setup, []byte("\x00edit|"+id))
}

// subKey tells a substitution of step n's request from the others: by
// its bytes, as lazyKey does; on a wide request, by the field it sets or
// removes when it is such an edit (editID), as that field's mutation is;
// and a substitution whose request is left to be made (Request nil) by
// its Edit.
func (g *gen) subKey(n int, regression bool, sub kavach.Substitution) [32]byte {
	if id, ok := g.editID(n, sub); ok {
		return editKey(n, regression, sub.Setup, id)
	}
	return lazyKey(n, regression, sub.Setup, g.subRequest(n, sub))
}

// editID says which one field sub sets, or removes, of step n's request,
// as makeFieldMutations names the mutation that does the same ("3=x",
// "-3"): for a substitution that says so (Edit) on a wide request, or
// on an earlier step when its request is left to be made (the failing
// request's, not wide, are told by their bytes, as its mutations are:
// subRequest makes it); for another on a wide request, when
// splitting it into fields shows one field changed or removed, and
// rebuilding the request so gives its bytes.
func (g *gen) editID(n int, sub kavach.Substitution) (string, bool) {
	fields, wide := g.wide[n]
	if sub.Edit != nil && (wide || sub.Request == nil && n != g.failing) {
		return strconv.Itoa(sub.Edit.Field) + "=" + sub.Edit.Value, true
	}
	if !wide || sub.Request == nil {
		return "", false
	}
	_, got, ok := g.opts.Variator.Fields(sub.Request, g.opts.Schema)
	if !ok {
		return "", false
	}
	same := func(a, b kavach.Field) bool { return a.Value == b.Value && a.Key == b.Key }
	i := 0
	for i < len(got) && i < len(fields) && same(got[i], fields[i]) {
		i++
	}
	var id string
	var edited []kavach.Field
	switch {
	case len(got) == len(fields) && i < len(got) && slices.EqualFunc(got[i+1:], fields[i+1:], same):
		edited = slices.Clone(fields)
		edited[i].Value = got[i].Value
		id = strconv.Itoa(i) + "=" + got[i].Value
	case len(got) == len(fields)-1 && slices.EqualFunc(got[i:], fields[i+1:], same):
		edited = slices.Delete(slices.Clone(fields), i, i+1)
		id = "-" + strconv.Itoa(runStart(fields, i))
	default:
		return "", false
	}
	if !bytes.Equal(g.opts.Variator.Rebuild(g.steps[n-1].Request.Data, edited), sub.Request) {
		return "", false
	}
	return id, true
}

// subRequest is sub's request, made now when the Variator left it to be
// made (Request nil, Edit set).
func (g *gen) subRequest(n int, sub kavach.Substitution) []byte {
	if sub.Request != nil || sub.Edit == nil {
		return sub.Request
	}
	req := g.steps[n-1].Request.Data
	_, fields, ok := g.opts.Variator.Fields(req, g.opts.Schema)
	if !ok || sub.Edit.Field < 0 || sub.Edit.Field >= len(fields) {
		return req
	}
	fields[sub.Edit.Field].Value = sub.Edit.Value
	return g.opts.Variator.Rebuild(req, fields)
}

// numbers are the mutations of an integer: boundaries, neighbours, signs,
// doubling and halving, and values past 32 and 64 bits.
func numbers(v string) []string {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return []string{"0", "-1", "1"}
	}
	// The recorded value's next comes second: the nearest other input of
	// the same shape (another id, another length), which a fix of the
	// recorded input alone gets wrong.
	out := []string{"0", strconv.FormatInt(n+1, 10), "1", "-1"}
	for _, x := range []int64{n - 1, -n, n * 2, n / 2} {
		out = append(out, strconv.FormatInt(x, 10))
	}
	return append(out, "2147483648", "-2147483649", "9223372036854775807", "-9223372036854775808", "99999999999999999999")
}
