package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/grade"
)

func verdictCommand() *cli.Command {
	return &cli.Command{
		Name:      "verdict",
		Usage:     "recompute a report's verdict from its evidence",
		ArgsUsage: "REPORT",
		Description: withExample("Recomputes the verdict from the evidence in a report written by 'kavach diff'\n"+
			"(never from its verdict or findings) and says whether it agrees with the verdict\n"+
			"written in it. Exit 0 when they agree, 1 when they do not, 2 when the report is unreadable.",
			"kavach verdict report.json"),
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
			var rep grade.Report
			if err := json.Unmarshal(b, &rep); err != nil {
				return fmt.Errorf("report %s: not a kavach diff report: %w", path, err)
			}
			if rep.SchemaVersion != grade.SchemaVersion {
				return fmt.Errorf("report %s: schema version %d, this Kavach reads %d", path, rep.SchemaVersion, grade.SchemaVersion)
			}
			parts, _ := grade.Derive(rep.Evidence)
			if got := parts.String(); got != rep.Verdict {
				fmt.Fprintf(c.App.Writer, "disagrees: the report says %s, its evidence gives %s\n", rep.Verdict, got)
				return &verdictError{code: exitRed}
			}
			fmt.Fprintf(c.App.Writer, "agrees: %s\n", rep.Verdict)
			return nil
		},
	}
}
