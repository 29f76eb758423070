package replay

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/kavach-dev/kavach"
)

// Recorded is what the recording itself shows of each step, in the same
// shape as a trace: normalized replies and the outcome.
func Recorded(events []kavach.Event, codec kavach.Codec, cl kavach.Classifier, n kavach.Normalizer) []StepResult {
	steps := kavach.Steps(events, codec)
	out := make([]StepResult, len(steps))
	for i, s := range steps {
		r := StepResult{N: s.N, Conn: s.Conn(), Ran: true, Responses: [][]byte{}, Output: []any{}, Request: s.Request.Data}
		for _, ev := range s.Responses {
			r.Responses = append(r.Responses, ev.Data)
			r.Output = append(r.Output, Normalize(n, s.Request.Data, ev.Data))
		}
		switch {
		case len(s.Responses) > 0:
			r.Outcome = cl.Classify(s.Request.Data, r.Responses)
		case s.Closed:
			r.Outcome = kavach.Outcome{Kind: kavach.Crash, Detail: "the service closed the connection"}
		default:
			r.Outcome = kavach.Outcome{Kind: kavach.Hang, Detail: "no reply recorded"}
		}
		out[i] = r
	}
	return out
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
func Compare(want, got StepResult) []Diff {
	var diffs []Diff
	if want.Outcome.Kind != got.Outcome.Kind || want.Outcome.Class != got.Outcome.Class {
		diffs = append(diffs, Diff{Step: want.N, Path: "outcome", Want: want.Outcome.String(), Got: got.Outcome.String()})
	}
	var rep pathReporter
	cmp.Equal(want.Output, got.Output, cmp.Reporter(&rep))
	for _, d := range rep.diffs {
		d.Step = want.N
		diffs = append(diffs, d)
	}
	return diffs
}

// pathReporter collects the path and both values of every difference.
type pathReporter struct {
	path  cmp.Path
	diffs []Diff
}

func (r *pathReporter) PushStep(ps cmp.PathStep) { r.path = append(r.path, ps) }
func (r *pathReporter) PopStep()                 { r.path = r.path[:len(r.path)-1] }

func (r *pathReporter) Report(rs cmp.Result) {
	if rs.Equal() {
		return
	}
	vx, vy := r.path.Last().Values()
	r.diffs = append(r.diffs, Diff{Path: renderPath(r.path), Want: render(vx), Got: render(vy)})
}

// renderPath turns a cmp path over []any of replies into "reply[0][2].key".
func renderPath(p cmp.Path) string {
	var sb strings.Builder
	sb.WriteString("reply")
	for _, ps := range p {
		switch s := ps.(type) {
		case cmp.SliceIndex:
			k := s.Key()
			if k < 0 {
				kx, ky := s.SplitKeys()
				k = max(kx, ky)
			}
			fmt.Fprintf(&sb, "[%d]", k)
		case cmp.MapIndex:
			fmt.Fprintf(&sb, ".%v", s.Key())
		}
	}
	return sb.String()
}

func render(v reflect.Value) string {
	if !v.IsValid() {
		return "(missing)"
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return fmt.Sprint(v.Interface())
	}
	return string(b)
}

// Noise is, per step, the output paths that differ between the recording
// and a replay of the old build: what the service does not reproduce
// (times, ids, orderings it does not promise). They are excluded from
// comparisons and always listed, never dropped silently.
type Noise map[int]map[string]bool

// FindNoise compares the recording with each old-build trace for steps
// 1 to upTo (exclusive; 0 means all) and returns the differing paths.
// Outcome differences are never noise.
func FindNoise(recorded []StepResult, upTo int, traces ...*Trace) Noise {
	n := Noise{}
	for _, tr := range traces {
		for i, want := range recorded {
			if (upTo > 0 && want.N >= upTo) || i >= len(tr.Steps) || !tr.Steps[i].Ran {
				continue
			}
			for _, d := range Compare(want, tr.Steps[i]) {
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
	return n
}

// Covers reports whether a difference at path of step lies in a noise
// field: the field itself or anything inside it.
func (n Noise) Covers(step int, path string) bool {
	for p := range n[step] {
		if path == p || strings.HasPrefix(path, p) && (path[len(p)] == '[' || path[len(p)] == '.') {
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

// List returns the noise as sorted "step N: PATH" entries.
func (n Noise) List() []NoiseField {
	var out []NoiseField
	for step, paths := range n {
		for p := range paths {
			out = append(out, NoiseField{Step: step, Path: p})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Step != out[j].Step {
			return out[i].Step < out[j].Step
		}
		return out[i].Path < out[j].Path
	})
	return out
}

// NoiseField is one output path of one step that is noise.
type NoiseField struct {
	Step int    `json:"step"`
	Path string `json:"path"`
}
