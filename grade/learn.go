package grade

import "github.com/kavach-dev/kavach"

// RequestKinds are the kinds of the steps' requests that v can vary, each
// once, in the order first met: what a diff asks the old build the field
// types of (learnSchema), and what `kavach variants --build` asks, so
// that both number their variants alike.
func RequestKinds(steps []kavach.Step, v *kavach.Variation) []string {
	var kinds []string
	seen := map[string]bool{}
	for _, s := range steps {
		if k, _, ok := v.Fields(s.Request.Data, nil); ok && !seen[k] {
			seen[k] = true
			kinds = append(kinds, k)
		}
	}
	return kinds
}
