package scenarios_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/loadtest"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// TestUpgradeContractsHeldUnderLoad grades each committed contract of the
// real-upgrade test bed (docs/upgrade.md: docs/upgrade-workload.txt typed
// into redis-cli beside a subscriber, and a go-redis session with a
// subscriber and a publisher), recorded on bookworm's Redis 7.0.15, with
// that build as both OLD and NEW, ten times while stress-ng saturates
// every core: held every time.
func TestUpgradeContractsHeldUnderLoad(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "examples", "upgrade-contracts")
	build := kavach.Launch{Path: redisbuild.MustBuild(t)}
	var fxs []*fixtures.Fixture
	for _, name := range []string{"redis-cli.kavach", "go-redis.kavach"} {
		fx, err := fixtures.Load(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		fxs = append(fxs, fx)
	}
	defer loadtest.Stress(t)()

	c := redis.Integration{}
	for _, fx := range fxs {
		for i := range loadtest.Runs(10) {
			rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), build, build,
				grade.Options{Integration: c, Variants: 4, Seed: uint64(i + 1)})
			if err != nil {
				t.Fatalf("%s, run %d: %v", filepath.Base(fx.Path), i+1, err)
			}
			if rep.Verdict != "held" {
				// The findings whole (each variant step's diffs included):
				// what moved is what the next look at a failure needs.
				findings, _ := json.Marshal(rep.Findings)
				t.Fatalf("%s, run %d under load: %s, want held; findings %s", filepath.Base(fx.Path), i+1, rep.Verdict, findings)
			}
		}
	}
}
