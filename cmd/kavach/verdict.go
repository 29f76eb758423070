package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/grade"
)

func verdictCommand() *cli.Command {
	return &cli.Command{
		Name:      "verdict",
		Usage:     "recompute a report's verdict from its evidence",
		ArgsUsage: "REPORT",
		Description: withExample("Recomputes the verdict from the evidence in a report written by 'kavach diff'\n"+
			"(never from its verdict or findings), each variant's pass or fail from its steps,\n"+
			"and says whether they agree with those written in it. Exit 0 when they agree, 1 when\n"+
			"they do not, 2 when the report is unreadable.",
			"kavach verdict report.json"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: `print {"report", "verdict", "derived", "agrees"} as JSON`},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			path, err := oneArg(c, "REPORT")
			if err != nil {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("read report: %w", err)
			}
			var probe struct {
				Suite bool `json:"suite"`
			}
			if json.Unmarshal(b, &probe) == nil && probe.Suite {
				return verdictSuite(c, path, b)
			}
			var rep grade.Report
			if err := json.Unmarshal(b, &rep); err != nil {
				return fmt.Errorf("report %s: not a kavach diff report: %w", path, err)
			}
			if rep.SchemaVersion != grade.SchemaVersion {
				return fmt.Errorf("report %s: schema version %d, this Kavach reads %d", path, rep.SchemaVersion, grade.SchemaVersion)
			}
			// Each variant is judged again from its steps (JudgeVariants),
			// and the verdict derived from the evidence so judged.
			judged, changed := grade.JudgeVariants(rep.Evidence)
			verdict, _ := grade.Derive(judged)
			got := verdict.String()
			// The steps after the failure the report explains must be the
			// ones its evidence explains (a report from before it listed
			// them has none to check).
			explainedOff := ""
			if rep.Explained != nil && got == rep.Verdict {
				if a, b := explainedList(rep.Explained), explainedList(grade.Explain(rep.Evidence)); a != b {
					explainedOff = fmt.Sprintf("the report explains after the failure %s, its evidence %s", a, b)
				}
			}
			out := verdictJSON{Report: path, Verdict: rep.Verdict, Derived: got, Explained: explainedOff, Variants: changed,
				Agrees: got == rep.Verdict && explainedOff == "" && len(changed) == 0}
			if c.Bool("json") {
				if err := printJSON(c.App.Writer, out); err != nil {
					return err
				}
			} else {
				for _, v := range changed {
					fmt.Fprintf(c.App.Writer, "disagrees: variant %d: the report says %s, its steps give %s\n", v.K, v.Written, v.Derived)
				}
				switch {
				case explainedOff != "":
					fmt.Fprintf(c.App.Writer, "disagrees: %s\n", explainedOff)
				case got != rep.Verdict:
					fmt.Fprintf(c.App.Writer, "disagrees: the report says %s, its evidence gives %s\n", rep.Verdict, got)
				case len(changed) == 0:
					fmt.Fprintf(c.App.Writer, "agrees: %s\n", rep.Verdict)
				}
			}
			if !out.Agrees {
				return &verdictError{code: exitRed}
			}
			return nil
		},
	}
}

// explainedList is explained steps as "step 4 inputs-differ, step 5
// changed-refusal", or "none".
func explainedList(ex []grade.Explained) string {
	var parts []string
	for _, e := range ex {
		parts = append(parts, fmt.Sprintf("step %d %s", e.Step, e.Reason))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// verdictJSON is `kavach verdict --json`'s output.
type verdictJSON struct {
	Report  string `json:"report"`
	Verdict string `json:"verdict"` // as written in the report
	Derived string `json:"derived"` // as its evidence gives it
	Agrees  bool   `json:"agrees"`
	// Explained says how the explained steps after the failure the report
	// lists differ from those its evidence gives (agrees is then false).
	Explained string `json:"explained_disagrees,omitempty"`
	// Variants are the variants whose judgment from their steps differs
	// from the report's (agrees is then false).
	Variants []grade.VariantChange `json:"variants_disagree,omitempty"`
	// Fixtures are a suite's fixtures, each re-derived (Report is then
	// the fixture's path).
	Fixtures []verdictJSON `json:"fixtures,omitempty"`
}

// printJSON prints v as indented JSON, the shape of every --json output.
func printJSON(w io.Writer, v any) error {
	enc := jsonEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jsonEncoder encodes JSON for a terminal or a program to read, not for
// an HTML page: "<", ">" and "&" as themselves, not \u003c.
func jsonEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}
