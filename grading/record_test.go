package grading

import "testing"

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
