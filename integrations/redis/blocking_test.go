package redis

import (
	"testing"
)

// Each blocking command's count and timeout are where Redis 7.0 reads
// them; a key named COUNT or BLOCK is no token, and another command has
// neither.
func TestBlockingFields(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		count, timeout int
	}{
		{[]string{"BLPOP", "a", "b", "0"}, -1, 2},
		{[]string{"brpop", "a", "1.5"}, -1, 1},
		{[]string{"BZPOPMIN", "z", "0"}, -1, 1},
		{[]string{"BLMOVE", "a", "b", "LEFT", "RIGHT", "0"}, -1, 4},
		{[]string{"BLMPOP", "0", "1", "jobs", "LEFT", "COUNT", "5"}, 5, 0},
		{[]string{"BLMPOP", "0", "2", "COUNT", "jobs", "LEFT"}, -1, 0},
		{[]string{"BZMPOP", "1", "1", "z", "MIN"}, -1, 0},
		{[]string{"XREAD", "COUNT", "2", "BLOCK", "800", "STREAMS", "s", "$"}, 1, 3},
		{[]string{"XREAD", "STREAMS", "COUNT", "BLOCK", "0", "0"}, -1, -1},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"}, -1, 4},
		{[]string{"WAIT", "1", "500"}, 0, 1},
		{[]string{"GET", "COUNT"}, -1, -1},
	} {
		b := make([][]byte, len(tc.args))
		for i, a := range tc.args {
			b[i] = []byte(a)
		}
		req := AppendCommand(nil, b...)
		_, fields, ok := Integration{}.Fields(req, nil)
		if !ok {
			t.Fatalf("%q: no fields", tc.args)
		}
		if c, to := (Integration{}).BlockingFields(req, fields); c != tc.count || to != tc.timeout {
			t.Errorf("%q: count %d, timeout %d; want %d, %d", tc.args, c, to, tc.count, tc.timeout)
		}
	}
}
