package textreport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/record"
)

func TestRecordedPrint(t *testing.T) {
	r := grading.Recorded{Fixture: "f.kavach", Result: record.Result{Reason: "the build exited"}}
	var stderr, stdout bytes.Buffer
	Recorded(&stderr, r)
	if !strings.Contains(stderr.String(), "no failure recorded: f.kavach is a contract") {
		t.Errorf("summary without a failure: %q", stderr.String())
	}
	if err := RecordedJSON(&stdout, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), `"failure": null`) || !strings.Contains(stdout.String(), `"ended": "the build exited"`) {
		t.Errorf("JSON: %s", stdout.String())
	}
}
