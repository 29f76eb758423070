package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/mcpserver"
)

// TestMCPInspector drives `kavach mcp` with another client than the Go
// SDK's: the MCP Inspector's command line (npx @modelcontextprotocol/inspector
// --cli), as a person debugging a setup would. It lists the tool, calls
// one that does not exist, and grades a real build.
func TestMCPInspector(t *testing.T) {
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx is not installed: the MCP Inspector's command line cannot run here")
	}
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOld)...)
	strlen := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenBroken)...)
	dir := t.TempDir()
	fixture := filepath.Join(dir, "getrange.kavach")
	if err := incidents.RecordGetrange(fixture, old); err != nil {
		t.Fatal(err)
	}
	bin, err := exec.LookPath("kavach")
	if err != nil {
		t.Fatal(err)
	}
	inspect := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npx, append([]string{"-y", "@modelcontextprotocol/inspector", "--cli", bin, "mcp"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := inspect("--method", "tools/list")
	if err != nil {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Tools) != 1 || list.Tools[0].Name != mcpserver.ToolName {
		t.Fatalf("tools/list: %v, want the one tool %s:\n%s", err, mcpserver.ToolName, out)
	}

	out, err = inspect("--method", "tools/call", "--tool-name", "kavach_grade")
	if err == nil || !strings.Contains(out, `unknown tool "kavach_grade"`) || !strings.Contains(out, "Call kavach_diff with") {
		t.Errorf("unknown tool: %v\n%s\nwant an error naming the tool and how to call kavach_diff", err, out)
	}

	report := filepath.Join(dir, "report.json")
	out, err = inspect("--method", "tools/call", "--tool-name", mcpserver.ToolName,
		"--tool-arg", "old="+old, "--tool-arg", "new="+strlen, "--tool-arg", "fixture="+fixture, "--tool-arg", "out="+report)
	if err != nil {
		t.Fatalf("tools/call: %v\n%s", err, out)
	}
	var res struct {
		IsError    bool                 `json:"isError"`
		Structured mcpserver.DiffOutput `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("tools/call: %v\n%s", err, out)
	}
	if res.IsError || res.Structured.Verdict != "diverged@3" || res.Structured.Report != report {
		t.Errorf("tools/call: %s, want diverged@3 and the report at %s", out, report)
	}
}
