package grading

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/record"
)

func TestCheckAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:6379": "",
		"localhost:1":    "",
		"127.0.0.1":      "not a HOST:PORT address",
		"127.0.0.1:0":    `port "0" is not a number from 1 to 65535`,
		"127.0.0.1:x":    `port "x" is not a number from 1 to 65535`,
		":6379":          "no host",
	} {
		err := CheckAddr(addr)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("CheckAddr(%q) = %q, want %q", addr, got, want)
		}
	}
}

func TestRecordedPrint(t *testing.T) {
	r := Recorded{Fixture: "f.kavach", Result: record.Result{Reason: "the build exited"}}
	var stderr, stdout bytes.Buffer
	r.PrintSummary(&stderr)
	if !strings.Contains(stderr.String(), "no failure recorded: f.kavach is a contract") {
		t.Errorf("summary without a failure: %q", stderr.String())
	}
	if err := r.PrintJSON(&stdout); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), `"failure": null`) || !strings.Contains(stdout.String(), `"ended": "the build exited"`) {
		t.Errorf("JSON: %s", stdout.String())
	}
}
