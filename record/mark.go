package record

import (
	"fmt"
	"strings"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
)

// FailureAt builds the failure a person declares with `kavach mark`: step n
// of the fixture fails by oracle. The signature is the oracle made as
// specific as the recording allows (an "error" oracle whose step shows
// the reply "-ERR value is not an integer or out of range" gets that
// signature, its variable parts masked: kavach.ErrorSignature; an oracle
// "error:CLASS" stays the loose class), and the evidence is what the
// recording shows at that step. codec may be nil.
func FailureAt(fx *fixtures.Fixture, codec kavach.Integration, n int, oracle kavach.Oracle) (kavach.Failure, error) {
	steps := kavach.Steps(fx.Events, codec)
	if n < 1 || n > len(steps) {
		return kavach.Failure{}, fmt.Errorf("step %d: fixture %s has steps 1 to %d", n, fx.Path, len(steps))
	}
	s := steps[n-1]
	f := kavach.Failure{Step: n, Oracle: oracle, Signature: oracle.String()}
	var ev []string
	for _, r := range s.Responses {
		ev = append(ev, describe(codec, r))
	}
	if s.Closed {
		ev = append(ev, "connection closed by the server")
	}
	f.Evidence = strings.Join(ev, "; ")
	if codec != nil && oracle.Kind == kavach.Error && len(s.Responses) > 0 {
		var data [][]byte
		for _, r := range s.Responses {
			data = append(data, r.Data)
		}
		f.Signature = oracle.SignatureFor(codec.Classify(s.Request.Data, data))
	}
	return f, nil
}

// describe renders a recorded message on one line for evidence, cut to
// about 200 bytes; a cut one says the message's true size, which the cut
// text's own length would misstate.
func describe(codec kavach.Integration, ev kavach.Event) string {
	const max = 200
	var s string
	switch {
	case codec != nil && ev.Flags&kavach.ParseError == 0 && ev.Dir == kavach.Request:
		s = codec.DescribeRequest(ev.Data, max)
	case codec != nil && ev.Flags&kavach.ParseError == 0:
		s = codec.DescribeResponse(ev.Data, max)
	default:
		s = fmt.Sprintf("%.200q", ev.Data)
		if len(ev.Data) > max {
			s += "…"
		}
	}
	// Codecs mark a cut with "…" (and may cut below max on their own).
	if len(ev.Data) > max && strings.HasSuffix(s, "…") {
		s += fmt.Sprintf(" (%d bytes)", len(ev.Data))
	}
	return s
}
