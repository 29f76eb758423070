package replay

import (
	"encoding/json"
	"fmt"
	"hash"
	"hash/fnv"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/kavach-dev/kavach"
)

// Recorded is what the recording itself shows of each step, in the same
// shape as a trace: normalized replies and the outcome.
func Recorded(events []kavach.Event, in kavach.Integration) []StepResult {
	steps := kavach.Steps(events, in)
	out := make([]StepResult, len(steps))
	for i, s := range steps {
		out[i] = RecordedStep(s, in)
	}
	return out
}

// RecordedStep is what the recording shows of one step, as Recorded.
func RecordedStep(s kavach.Step, in kavach.Integration) StepResult {
	r := StepResult{N: s.N, Conn: s.Conn(), Ran: true, Responses: [][]byte{}, Output: []any{}, Request: s.Request.Data,
		Foreign: s.Request.Flags&kavach.Foreign != 0}
	for _, ev := range s.Responses {
		r.Responses = append(r.Responses, ev.Data)
		r.Output = append(r.Output, in.Normalize(s.Request.Data, ev.Data))
	}
	switch {
	case len(s.Responses) > 0:
		r.Outcome = in.Classify(s.Request.Data, r.Responses)
	case s.Closed:
		r.Outcome = kavach.Outcome{Kind: kavach.Crash, Detail: "the service closed the connection"}
	default:
		r.Outcome = kavach.Outcome{Kind: kavach.Hang, Detail: "no reply recorded"}
	}
	return r
}

// Diff is one difference between the expected and the actual output of a step.
type Diff struct {
	Step int    `json:"step"`
	Path string `json:"path"` // "reply[0]", "reply[1][2]", "reply[0].name", "outcome"
	Want string `json:"want"` // JSON, or "(missing)"
	Got  string `json:"got"`
}

func (d Diff) String() string {
	return fmt.Sprintf("step %d %s: want %s, got %s", d.Step, d.Path, d.Want, d.Got)
}

// Compare lists where got differs from want at one step: the outcome kind
// and class, then every path of the normalized output that differs.
func Compare(want, got StepResult) []Diff { return CompareSkipping(want, got, nil) }

// CompareSkipping is Compare with the paths skip reports (noise) left out
// before they are diffed: neither descended into nor reported. skip may
// be nil.
//
// The cost is bounded by the size of the trees: equal subtrees are
// recognised (by equality, and in lists of different lengths by hash)
// before anything is aligned, and lists are aligned in one pass over the
// elements' hashes (common prefix and suffix, then insertions and
// deletions found by hash), never by an edit distance over whole replies.
// Multi-line strings (a text body, INFO) are compared line by line, and a
// line of the same number of whitespace-separated tokens token by token:
// "reply[0].body:3" is line 3 of the body, "reply[0].body:3:2" its second
// token.
func CompareSkipping(want, got StepResult, skip func(path string) bool) []Diff {
	var diffs []Diff
	if want.Outcome.Kind != got.Outcome.Kind || want.Outcome.Class != got.Outcome.Class {
		diffs = append(diffs, Diff{Step: want.N, Path: "outcome", Want: want.Outcome.String(), Got: got.Outcome.String()})
	}
	d := differ{skip: skip}
	d.list("reply", want.Output, got.Output, func(i int) string { return fmt.Sprintf("reply[%d]", i) })
	for _, x := range d.diffs {
		x.Step = want.N
		diffs = append(diffs, x)
	}
	return diffs
}

// differ walks two normalized trees and collects their differences.
type differ struct {
	skip  func(path string) bool
	diffs []Diff
}

func (d *differ) add(path string, want, got any, wantOK, gotOK bool) {
	w, g := "(missing)", "(missing)"
	if wantOK {
		w = renderValue(want)
	}
	if gotOK {
		g = renderValue(got)
	}
	d.diffs = append(d.diffs, Diff{Path: path, Want: w, Got: g})
}

func (d *differ) value(path string, want, got any) {
	if d.skip != nil && d.skip(path) {
		return
	}
	if equal(want, got) {
		return
	}
	switch w := want.(type) {
	case []any:
		if g, ok := got.([]any); ok {
			d.list(path, w, g, func(i int) string { return fmt.Sprintf("%s[%d]", path, i) })
			return
		}
	case map[string]any:
		if g, ok := got.(map[string]any); ok {
			keys := make([]string, 0, len(w)+len(g))
			for k := range w {
				keys = append(keys, k)
			}
			for k := range g {
				if _, ok := w[k]; !ok {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				wv, wok := w[k]
				gv, gok := g[k]
				p := path + "." + k
				switch {
				case wok && gok:
					d.value(p, wv, gv)
				case d.skip == nil || !d.skip(p):
					d.add(p, wv, gv, wok, gok)
				}
			}
			return
		}
	case string:
		if g, ok := got.(string); ok && (strings.Contains(w, "\n") || strings.Contains(g, "\n")) {
			d.text(path, w, g)
			return
		}
	}
	d.add(path, want, got, true, true)
}

// list compares two lists, element paths given by at.
func (d *differ) list(path string, want, got []any, at func(int) string) {
	if d.skip != nil && d.skip(path) {
		return
	}
	align(len(want), len(got), func(i, j int) bool { return equal(want[i], got[j]) },
		func(i int) uint64 { return hashOf(want[i]) }, func(j int) uint64 { return hashOf(got[j]) },
		func(i, j int) {
			switch {
			case i >= 0 && j >= 0:
				d.value(at(i), want[i], got[j])
			case i >= 0:
				if d.skip == nil || !d.skip(at(i)) {
					d.add(at(i), want[i], nil, true, false)
				}
			default:
				if d.skip == nil || !d.skip(at(j)) {
					d.add(at(j), nil, got[j], false, true)
				}
			}
		})
}

// text compares two multi-line strings by line, and lines of as many
// tokens by token.
func (d *differ) text(path string, want, got string) {
	wl, gl := lines(want), lines(got)
	lineHash := func(l []string) func(int) uint64 {
		return func(i int) uint64 { h := fnv.New64a(); h.Write([]byte(l[i])); return h.Sum64() }
	}
	align(len(wl), len(gl), func(i, j int) bool { return wl[i] == gl[j] }, lineHash(wl), lineHash(gl),
		func(i, j int) {
			n := i
			if n < 0 {
				n = j
			}
			lp := fmt.Sprintf("%s:%d", path, n+1)
			if d.skip != nil && d.skip(lp) {
				return
			}
			if i < 0 || j < 0 {
				var w, g any
				if i >= 0 {
					w = wl[i]
				}
				if j >= 0 {
					g = gl[j]
				}
				d.add(lp, w, g, i >= 0, j >= 0)
				return
			}
			wt, gt := strings.Fields(wl[i]), strings.Fields(gl[j])
			if len(wt) != len(gt) {
				d.add(lp, wl[i], gl[j], true, true)
				return
			}
			for k := range wt {
				tp := fmt.Sprintf("%s:%d", lp, k+1)
				if wt[k] != gt[k] && (d.skip == nil || !d.skip(tp)) {
					d.add(tp, wt[k], gt[k], true, true)
				}
			}
		})
}

func lines(s string) []string {
	l := strings.Split(s, "\n")
	for i := range l {
		l[i] = strings.TrimSuffix(l[i], "\r")
	}
	return l
}

// align pairs the elements of two sequences of lengths n and m, calling
// pair(i, j) for each pair that differs (i or j -1 for an element only one
// side has) in order. Equal common prefixes and suffixes are skipped; in
// between, an element whose hash appears further on the other side marks
// an insertion or a deletion, anything else a changed pair. One pass, no
// edit distance.
func align(n, m int, eq func(i, j int) bool, hw, hg func(int) uint64, pair func(i, j int)) {
	p := 0
	for p < n && p < m && eq(p, p) {
		p++
	}
	sn, sm := n, m
	for sn > p && sm > p && eq(sn-1, sm-1) {
		sn--
		sm--
	}
	if sn-p == sm-p {
		for k := p; k < sn; k++ {
			pair(k, k)
		}
		return
	}
	wpos := map[uint64][]int{}
	for i := p; i < sn; i++ {
		wpos[hw(i)] = append(wpos[hw(i)], i)
	}
	gpos := map[uint64][]int{}
	for j := p; j < sm; j++ {
		gpos[hg(j)] = append(gpos[hg(j)], j)
	}
	later := func(pos map[uint64][]int, h uint64, from int) bool {
		for _, x := range pos[h] {
			if x > from {
				return true
			}
		}
		return false
	}
	i, j := p, p
	for i < sn || j < sm {
		switch {
		case i < sn && j < sm && eq(i, j):
			i++
			j++
		case i < sn && j < sm && later(gpos, hw(i), j) && !later(wpos, hg(j), i):
			pair(-1, j) // got has an element inserted before want's i
			j++
		case i < sn && j < sm && later(wpos, hg(j), i) && !later(gpos, hw(i), j):
			pair(i, -1) // want's i was deleted
			i++
		case i < sn && j < sm:
			pair(i, j)
			i++
			j++
		case i < sn:
			pair(i, -1)
			i++
		default:
			pair(-1, j)
			j++
		}
	}
}

// equal is deep equality of normalized trees, without reflection.
func equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// hashOf is a hash of a normalized tree: equal trees hash equal.
func hashOf(v any) uint64 {
	h := fnv.New64a()
	hashInto(h, v)
	return h.Sum64()
}

func hashInto(h hash.Hash64, v any) {
	switch x := v.(type) {
	case nil:
		h.Write([]byte{0})
	case string:
		h.Write([]byte{1})
		h.Write([]byte(x))
		h.Write([]byte{0})
	case []any:
		h.Write([]byte{2})
		for _, e := range x {
			hashInto(h, e)
		}
		h.Write([]byte{3})
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		h.Write([]byte{4})
		for _, k := range keys {
			h.Write([]byte(k))
			h.Write([]byte{0})
			hashInto(h, x[k])
		}
		h.Write([]byte{5})
	default:
		fmt.Fprintf(h, "\x06%T:%v\x00", v, v)
	}
}

// renderValue writes v as JSON for a person to read: "<" and ">" and "&"
// as themselves, not \u003c (json.Marshal's escaping is for HTML pages).
func renderValue(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Noise is, per step, the output paths that differ between the recording
// and a replay of the old build: what the service does not reproduce
// (times, ids, orderings it does not promise). They are excluded from
// comparisons and always listed, never dropped silently.
type Noise map[int]map[string]bool

// AddStep adds the noise of one step: the output paths where a replay of
// the old build, got, differs from the recording, want. Steps that did
// not run, and contained ones (not compared), are left out; outcome
// differences are never noise.
func (n Noise) AddStep(want StepResult, got ...StepResult) {
	for _, g := range got {
		if !g.Ran || g.Contained != "" || g.Foreign {
			continue
		}
		for _, d := range Compare(want, g) {
			if d.Path == "outcome" {
				continue
			}
			if n[d.Step] == nil {
				n[d.Step] = map[string]bool{}
			}
			n[d.Step][d.Path] = true
		}
	}
}

// Covers reports whether a difference at path of step lies in a noise
// field: the field itself or anything inside it.
func (n Noise) Covers(step int, path string) bool {
	for p := range n[step] {
		if path == p || strings.HasPrefix(path, p) && strings.IndexByte("[.:", path[len(p)]) >= 0 {
			return true
		}
	}
	return false
}

// Split separates diffs into those that count and those that are noise.
func (n Noise) Split(diffs []Diff) (count, noise []Diff) {
	for _, d := range diffs {
		if n.Covers(d.Step, d.Path) {
			noise = append(noise, d)
		} else {
			count = append(count, d)
		}
	}
	return count, noise
}

// NoiseField is one output path of one step that is noise.
type NoiseField struct {
	Step int    `json:"step"`
	Path string `json:"path"`
	// Values are the values seen there: the recording's first, then each
	// replay's that differed (JSON; at most MaxNoiseValues, in order seen).
	Values []string `json:"values,omitempty"`
	// Differed is in how many of the traces the field differed from the
	// recording; Of is how many traces there were. Differed < Of: the old
	// build reproduced the recording here in some replays and not in
	// others, an answer that depends on timing.
	Differed int `json:"differed_in,omitempty"`
	Of       int `json:"of,omitempty"`
}

// MaxNoiseValues is how many values a NoiseField keeps.
const MaxNoiseValues = 5

// SeenStep lists the noise of one step as List does, with the values each
// field took in the recording, want, and in the old build's replays, got
// (one per replay, run or not), and in how many of them it differed.
func (n Noise) SeenStep(want StepResult, got ...StepResult) []NoiseField {
	paths := n[want.N]
	if len(paths) == 0 {
		return nil
	}
	out := make([]NoiseField, 0, len(paths))
	for p := range paths {
		out = append(out, NoiseField{Step: want.N, Path: p, Of: len(got)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	at := map[string]int{}
	for i, f := range out {
		at[f.Path] = i
	}
	add := func(i int, v string) {
		if v == "(missing)" || slices.Contains(out[i].Values, v) || len(out[i].Values) >= MaxNoiseValues {
			return
		}
		out[i].Values = append(out[i].Values, v)
	}
	for _, g := range got {
		if !g.Ran {
			continue
		}
		for _, d := range Compare(want, g) {
			if i, ok := at[d.Path]; ok {
				add(i, d.Want)
				add(i, d.Got)
				out[i].Differed++
			}
		}
	}
	return out
}

// MissingState is the first field, at a step before before (0: any step),
// where every replay of the old build differed from the recording and
// all of them gave the same value, one that says the data is not there
// (absent): what a build started without the
// state the recording's service held does (a read of data it never got),
// which the old build's replays agree on. ok false: none. It is asked of
// a fixture recorded in front of a running service that holds none of
// its state (docs/replay.md, "State"): there such a difference is the
// fixture lacking state, never noise.
func MissingState(seen []NoiseField, before int) (f NoiseField, ok bool) {
	for _, s := range seen {
		if before > 0 && s.Step >= before {
			continue
		}
		if s.Of > 0 && s.Differed == s.Of && len(s.Values) <= 2 && absent(s.Values) && (!ok || s.Step < f.Step) {
			f, ok = s, true
		}
	}
	return f, ok
}

// absent reports whether the replays' one value (values[1]; none when
// the field was missing in them) is what a service answers for data it
// does not hold: nothing, an empty string or collection, a zero count, a
// time to live of a missing key (-2), where the recording had something
// else. A consistent difference of another kind (an idle time, a
// server's age) is not missing data: it stays noise.
func absent(values []string) bool {
	if len(values) < 2 {
		return true
	}
	switch values[1] {
	case "null", "[]", "{}", `""`, "0", "-2":
		return true
	}
	return false
}

// MissingStateReason says what MissingState found, for a person: the
// step, the values, and how to record the state.
func MissingStateReason(f NoiseField) string {
	want, got := "(missing)", "(missing)"
	if len(f.Values) > 0 {
		want = f.Values[0]
	}
	if len(f.Values) > 1 {
		got = f.Values[1]
	}
	return fmt.Sprintf("step %d %s: every replay of the old build gives %s, the recording %s, and the fixture holds none of the state of the service it was recorded in front of; record it again (kavach record --upstream takes the service's state by default)",
		f.Step, f.Path, cutValue(got), cutValue(want))
}

func cutValue(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
