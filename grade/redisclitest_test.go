package grade_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

func TestRecordedWithRedisCli(t *testing.T) {
	t.Parallel()
	// The INCRBY incident typed into stock redis-cli 7, which sends
	// COMMAND DOCS first: a reply whose order changes with every server
	// process. Its variants deliver that step twice, drop it, move the
	// failure before it: the correct fix must still be fixed.
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli (the stock client, Debian's redis-tools) is needed: %v", err)
	}
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.IncrbyOld)...)
	out := filepath.Join(t.TempDir(), "incrby-cli.kavach")
	if err := incidents.RecordWithRedisCli(out, old, cli, incidents.Incrby); err != nil {
		t.Fatal(err)
	}
	if err := incidents.MarkFailure(out, 5, "error"); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	rep := diff(t, fx, old, redisbuild.MustBuild(t), 10)
	if first := rep.Evidence.New.Steps[0].Request; first != `COMMAND "DOCS"` {
		t.Fatalf("step 1 is %s: redis-cli sent no COMMAND DOCS", first)
	}
	if rep.Verdict != "fixed" {
		t.Fatalf("correct fix on a redis-cli recording: %s, want fixed; findings %+v", rep.Verdict, rep.Findings)
	}
	twice := false
	for _, v := range rep.Evidence.Variants.List {
		twice = twice || v.Kept && strings.Contains(v.Description, `step 1 (COMMAND "DOCS") delivered twice`)
	}
	if !twice {
		t.Error("no kept variant delivers COMMAND DOCS twice")
	}
	// The narrow fix stays red on the same recording.
	if narrow := diff(t, fx, old, redisbuild.MustBuild(t, incidents.PatchPaths(incidents.IncrbyNarrow)...), 10); !strings.HasPrefix(narrow.Verdict, "variant_failed(") {
		t.Errorf("narrow fix on a redis-cli recording: %s, want variant_failed", narrow.Verdict)
	}
}
