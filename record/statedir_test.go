package record

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/axum"
)

// TestStateDirRefused: a state directory is a launched build's, and must
// be a directory; a refused recording starts nothing and leaves no file.
func TestStateDirRefused(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "items.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	launch := &kavach.Launch{Path: "/bin/true", Args: []string{"--state", "{state}"}}
	for _, tc := range []struct {
		name string
		s    Session
		want string
	}{
		{"upstream", Session{Upstream: "127.0.0.1:1", StateDir: dir}, "a state directory is a launched build's"},
		{"missing", Session{Launch: launch, StateDir: filepath.Join(dir, "nope")}, "no such directory"},
		{"a file", Session{Launch: launch, StateDir: file}, "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.Out = filepath.Join(t.TempDir(), "x.kavach")
			tc.s.Proxy.Codec = axum.Integration{}
			_, err := tc.s.Run(context.Background(), axum.Protocol, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v, want %q", err, tc.want)
			}
			ents, _ := os.ReadDir(filepath.Dir(tc.s.Out))
			if len(ents) != 0 {
				t.Errorf("left behind: %v", ents)
			}
		})
	}
}
