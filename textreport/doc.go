// Package textreport renders Kavach's results for a terminal: the text
// `kavach diff` and the MCP tool print of a report or a suite's (Diff,
// Suite), with its hint (Hint) and its by-kind lines (KindsLine,
// StarvedLine); a fixture shown for a person (View: its header, the
// steps' table, one step, JSON Lines); the variants listed or run
// (Variants, RanVariants); and what kavach mark and kavach record say
// back (Marked, Recorded, Cuts), each with its --json form beside it.
// It renders what package grading and package grade give it; it grades,
// replays and decides nothing (a replay's table, which reads the runs'
// spills as it writes, is ReplayResult.Print in grading).
//
// Layers: cmd/kavach and mcpserver -> textreport -> grading, grade.
package textreport
