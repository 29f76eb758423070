package replay

import (
	"io"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/integrations/redis"
)

// TestSpillRestart: a spill restarted while its encoder still has
// batches holds only the steps written after, however many batches they
// span.
func TestSpillRestart(t *testing.T) {
	sp, err := NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for i := 1; i <= 3*spillBatch+7; i++ {
		sp.Step(StepResult{N: i, Responses: [][]byte{[]byte("+old\r\n")}})
	}
	sp.Restart()
	const n = 2*spillBatch + 3
	for i := 1; i <= n; i++ {
		if err := sp.Step(StepResult{N: i, Responses: [][]byte{[]byte("+new\r\n")}}); err != nil {
			t.Fatal(err)
		}
	}
	rd, err := sp.Steps()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; ; i++ {
		s, err := rd.Next([]byte("*1\r\n$4\r\nPING\r\n"), redis.Integration{})
		if err == io.EOF {
			if i != n+1 || sp.Len() != n {
				t.Fatalf("read back %d steps (Len %d), want %d", i-1, sp.Len(), n)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if s.N != i || string(s.Responses[0]) != "+new\r\n" {
			t.Fatalf("step %d read back as %d %q", i, s.N, s.Responses[0])
		}
	}
}

// TestSpillWriteError: a spill whose file can no longer be written says
// so, at a later Step or at Steps, never silently.
func TestSpillWriteError(t *testing.T) {
	sp, err := NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sp.f.Close() // as a disk that fails
	big := []byte("+" + strings.Repeat("x", 64<<10) + "\r\n")
	var stepErr error
	for i := 1; i <= 20*spillBatch && stepErr == nil; i++ {
		stepErr = sp.Step(StepResult{N: i, Responses: [][]byte{big}})
	}
	_, readErr := sp.Steps()
	if readErr == nil || !strings.Contains(readErr.Error(), "replay: spill") {
		t.Errorf("Steps after a failed write: %v, want the spill's error", readErr)
	}
	if stepErr == nil {
		t.Error("no Step reported the failed writes")
	}
	sp.Close()
}
