package kavach_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// tomlTables reads the simple TOML of a Harbor task.toml by hand (the
// project has no TOML parser): each table, in order, with its keys' raw
// values. A [[name]] table is one entry of an array of tables.
func tomlTables(t *testing.T, path string) []tomlTable {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tables := []tomlTable{{Name: "", Keys: map[string]string{}}}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[[") && strings.HasSuffix(line, "]]"):
			tables = append(tables, tomlTable{Name: line[2 : len(line)-2], Array: true, Keys: map[string]string{}})
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			tables = append(tables, tomlTable{Name: line[1 : len(line)-1], Keys: map[string]string{}})
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s:%d: not a key = value line: %s", path, i+1, line)
			}
			tables[len(tables)-1].Keys[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return tables
}

type tomlTable struct {
	Name  string
	Array bool
	Keys  map[string]string
}

func table(tables []tomlTable, name string) []tomlTable {
	var out []tomlTable
	for _, tb := range tables {
		if tb.Name == name {
			out = append(out, tb)
		}
	}
	return out
}

// TestHarborTaskTOML: the Harbor task template gives Harbor what it needs:
// a verifier budget that test.sh is told of, and kavach mcp for the agent
// as a stdio server at an absolute path the image installs it to.
func TestHarborTaskTOML(t *testing.T) {
	const path = "examples/harbor-task/task.toml"
	tables := tomlTables(t, path)
	if v := tables[0].Keys["version"]; v != `"1.0"` {
		t.Errorf("version = %s, want \"1.0\"", v)
	}
	for _, name := range []string{"metadata", "verifier", "agent", "environment"} {
		if len(table(tables, name)) != 1 {
			t.Errorf("%s: want one [%s] table", path, name)
		}
	}

	// The verifier's timeout, and test.sh told of it.
	v := table(tables, "verifier")
	if len(v) == 1 {
		sec, err := strconv.ParseFloat(v[0].Keys["timeout_sec"], 64)
		if err != nil || sec <= 0 {
			t.Errorf("[verifier] timeout_sec = %q: want a positive number", v[0].Keys["timeout_sec"])
		}
		m := regexp.MustCompile(`\bVERIFIER_TIMEOUT_SEC *= *"([0-9]+)"`).FindStringSubmatch(v[0].Keys["env"])
		if m == nil {
			t.Errorf("[verifier] env = %s: want VERIFIER_TIMEOUT_SEC = \"N\"", v[0].Keys["env"])
		} else if n, _ := strconv.Atoi(m[1]); float64(n) != sec {
			t.Errorf("[verifier] env VERIFIER_TIMEOUT_SEC = %d, timeout_sec = %v: they must match", n, sec)
		}
	}
	if a := table(tables, "agent"); len(a) == 1 {
		if _, err := strconv.ParseFloat(a[0].Keys["timeout_sec"], 64); err != nil {
			t.Errorf("[agent] timeout_sec = %q: want a number", a[0].Keys["timeout_sec"])
		}
	}

	// kavach mcp for the agent.
	servers := table(tables, "environment.mcp_servers")
	if len(servers) != 1 || !servers[0].Array {
		t.Fatalf("%s: want one [[environment.mcp_servers]] entry, got %d", path, len(servers))
	}
	s := servers[0].Keys
	for k, want := range map[string]string{"name": `"kavach"`, "transport": `"stdio"`, "args": `["mcp"]`} {
		if got := strings.ReplaceAll(s[k], " ", ""); got != want {
			t.Errorf("mcp_servers %s = %s, want %s", k, s[k], want)
		}
	}
	command, err := strconv.Unquote(s["command"])
	if err != nil || !strings.HasPrefix(command, "/") {
		t.Errorf("mcp_servers command = %s: want an absolute path (the agent's working directory is not known)", s["command"])
	}
	// Every path in the file is absolute.
	for _, tb := range tables {
		for k, raw := range tb.Keys {
			for _, q := range regexp.MustCompile(`"[^"]*"`).FindAllString(raw, -1) {
				if p, _ := strconv.Unquote(q); strings.Contains(p, "/") && !strings.HasPrefix(p, "/") {
					t.Errorf("[%s] %s: %s is not an absolute path", tb.Name, k, p)
				}
			}
		}
	}
	// The image installs kavach where the entry says.
	docker, err := os.ReadFile("examples/harbor-task/environment/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^COPY .* ` + regexp.QuoteMeta(command) + `$`).Match(docker) {
		t.Errorf("the Dockerfile installs no kavach at %s", command)
	}
}

// TestExitStatusesDocumented: every place that lists the exit statuses
// lists them all, as docs/cli.md does: held with fixed at 0, and 130 and
// 143 for SIGINT and SIGTERM.
func TestExitStatusesDocumented(t *testing.T) {
	for _, f := range []string{"README.md", "docs/agents.md", "docs/cli.md", "docs/design.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		i := strings.Index(s, "Exit status")
		if i < 0 {
			t.Errorf("%s lists no exit status", f)
			continue
		}
		// The list: up to the next blank line after the heading's.
		list := s[i:]
		if j := strings.Index(list[strings.Index(list, "\n")+1:], "\n\n"); j >= 0 && !strings.HasPrefix(list, "Exit status\n") {
			list = list[:strings.Index(list, "\n")+1+j]
		}
		if strings.HasPrefix(list, "Exit status\n") {
			// docs/cli.md's heading: its table follows.
			list = list[:strings.Index(list, "Errors go to")]
		}
		for _, want := range []string{"fixed", "held", "unverified", "red verdict", "SIGINT", "SIGTERM"} {
			if !strings.Contains(list, want) {
				t.Errorf("%s: the exit statuses do not mention %s:\n%s", f, want, list)
			}
		}
		if !regexp.MustCompile(`\b130\b`).MatchString(list) && !strings.Contains(list, "128 + the signal") {
			t.Errorf("%s: the exit statuses do not give 130/143:\n%s", f, list)
		}
	}
}
