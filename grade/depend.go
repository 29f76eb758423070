package grade

import (
	"context"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/replay"
)

// learnKeys asks a fresh old build which keys (or resources) the steps
// touch, and which of them each writes (Learn): for judging the steps
// after the failure, and for where the variants go (the steps before
// it). Every step stays unknown (nil) when the integration cannot tell or
// the build cannot be asked; a nil writes entry is unknown too (the step
// may write every key it touches, kavach.Abilities.Keys). The same build
// is asked for the failing step's group (Learning.Group), which the
// changed-refusal rule reaches.
func learnKeys(ctx context.Context, steps []kavach.Step, failing int, old kavach.Launch, opts Options) Learned {
	ask := Learning{Keys: true, Pool: opts.Pool}
	for _, s := range steps {
		if s.N == failing {
			ask.Group = s.Request.Data
		}
	}
	l, _ := Learn(ctx, opts.Integration, old, steps, ask)
	return l
}

// The rules that judge a step after the failure, and the reasons a
// difference there is the fix's (docs/diff.md, "After the failure").
const (
	// RuleObserved: every replay fingerprinted the state the step read;
	// the old build's and the new build's fingerprints decide.
	RuleObserved = "observed"
	// RuleInferred: no fingerprints; the keys a changed step wrote decide.
	RuleInferred = "inferred"

	ReasonInputs  = "inputs-differ"     // what the step read differs between the builds
	ReasonRefusal = "changed-refusal"   // both refuse a request of the failing command's family or group, on the same inputs
	ReasonShown   = "failure-shown"     // the recording or the old build showed a failure at the step
	ReasonDepends = "depends-on-change" // the step touches state a changed step wrote (inferred)
)

// DetailRefusedAfter is the detail of a finding after the failure where
// the new build refuses a request the old build answered.
const DetailRefusedAfter = "after the failing step, the new build refuses a request the old build answered"

// InputField is one field of a fingerprint on the two builds.
type InputField struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// Explained is a step after the failure whose difference from the
// recording the fix explains, with the reason, the rule that decided it,
// and the recorded, old and new answers side by side.
type Explained struct {
	Step           int            `json:"step"`
	Reason         string         `json:"reason"`
	Rule           string         `json:"rule"`
	Request        string         `json:"request"`
	Recorded       kavach.Outcome `json:"recorded"`
	Old            kavach.Outcome `json:"old"`
	New            kavach.Outcome `json:"new"`
	RecordedOutput []any          `json:"recorded_output,omitempty"`
	OldOutput      []any          `json:"old_output,omitempty"`
	NewOutput      []any          `json:"new_output,omitempty"`
	Diffs          []replay.Diff  `json:"diffs,omitempty"`
	// Inputs are the fingerprint fields that differ (inputs-differ), or
	// every field, equal on both builds (changed-refusal).
	Inputs []InputField `json:"inputs,omitempty"`
}

// ReasonCount is how many explained steps have one reason.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// ExplainedBy counts explained steps by reason, in the reasons' order.
func ExplainedBy(ex []Explained) []ReasonCount {
	var out []ReasonCount
	for _, reason := range []string{ReasonInputs, ReasonRefusal, ReasonShown, ReasonDepends} {
		n := 0
		for _, e := range ex {
			if e.Reason == reason {
				n++
			}
		}
		if n > 0 {
			out = append(out, ReasonCount{Reason: reason, Count: n})
		}
	}
	return out
}
