package textreport

import (
	"encoding/json"
	"testing"
)

// FuzzStepJSON: a line of show --json, written without reflection, is
// byte for byte what encoding/json writes for it, whatever the strings
// hold (control bytes, HTML characters, invalid UTF-8, U+2028).
func FuzzStepJSON(f *testing.F) {
	f.Add(1, uint64(2), "GET \"k\"", "<b>&amp;</b>", "\x00\x1f\x7f\xff\xfe", "\u2028\u2029 é", true, false)
	f.Add(0, uint64(0), "", "", "", "", false, true)
	f.Fuzz(func(t *testing.T, step int, conn uint64, req, resp, r2, outcome string, closed, failure bool) {
		l := stepJSON{Step: step, Conn: conn, Seq: conn * 3, OffsetNS: int64(step) * -7, Request: req, Response: resp,
			Responses: []string{resp, r2}, Outcome: outcome, Closed: closed, Failure: failure}
		if step%2 == 0 {
			l.Responses = []string{}
		}
		want, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		if got := l.appendJSON(nil); string(got) != string(want) {
			t.Errorf("appendJSON:\n got %s\nwant %s", got, want)
		}
	})
}
