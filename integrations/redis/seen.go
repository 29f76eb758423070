package redis

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kavach-dev/kavach"
)

// MinSecretInside is how long a secret must be (in bytes) to be redacted
// inside other values once seen: a shorter one is redacted only where it
// is a whole value (an argument, a string in a reply; a word in bytes the
// codec cannot frame). Replacing every "ab" or "42" inside keys, values
// and error messages would turn ordinary data to noise (a password "ab"
// would make "about" "<redacted>out"), and the recording would then
// differ from its replay wherever data merely held those bytes.
const MinSecretInside = 4

// seenNote is the note of a redaction of a secret the recording saw
// earlier.
const seenNote = "a secret seen earlier in the recording"

// seenSecrets are the secrets one recording has seen: every value the
// redaction treats as a secret (the password of AUTH, HELLO ... AUTH,
// MIGRATE ... AUTH/AUTH2, CONFIG SET requirepass/masterauth, the value of
// an ACL SETUSER password rule), and the replay secret it was made with.
// Safe for concurrent use: the recorder redacts each connection's
// requests on that connection's goroutine.
type seenSecrets struct {
	mu   sync.Mutex               // serializes learn
	list atomic.Pointer[[][]byte] // longest first; replaced whole, never changed in place
}

// newRedaction is the Redaction of one recording (or of one replay's
// comparison): the integration's redaction, and every secret it has seen
// (and secret, when not empty) redacted wherever it occurs later, in
// requests and replies, whole or inside a value (MinSecretInside), on every
// connection. Only requests teach it a secret: a replay's comparison, which
// never calls Request, then redacts the same secrets in every run whatever
// the order its replies come in.
func newRedaction(secret string) *kavach.Redaction {
	var in Integration
	s := &seenSecrets{}
	s.learn([]byte(secret))
	return &kavach.Redaction{
		Request:            s.request,
		ReplyMayHoldSecret: in.ReplyMayHoldSecret,
		Reply:              s.reply,
		Raw:                s.raw,
	}
}

// request is the integration's Redact, then the secrets seen (its own
// among them) redacted in every argument.
func (s *seenSecrets) request(request []byte) ([]byte, string) {
	s.learnFrom(request)
	out, note := Integration{}.Redact(request)
	return s.hideInRequest(out, note)
}

// reply is the integration's RedactReply, then the secrets seen redacted
// in every string.
func (s *seenSecrets) reply(request, response []byte) ([]byte, string) {
	out, note := Integration{}.RedactReply(request, response)
	return s.hideInReply(out, note)
}

// raw is the integration's RedactRaw, then the secrets seen redacted in
// the bytes.
func (s *seenSecrets) raw(data []byte, request bool) ([]byte, string) {
	out, note := Integration{}.RedactRaw(data, request)
	if hidden, ok := hideSeen(out, s.all(), true); ok {
		out, note = hidden, joinNotes(note, seenNote)
	}
	return out, note
}

// learn adds a secret; empty ones and the marker itself are not secrets.
func (s *seenSecrets) learn(secret []byte) {
	if len(secret) == 0 || string(secret) == Redacted {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.all()
	if slices.ContainsFunc(old, func(b []byte) bool { return bytes.Equal(b, secret) }) {
		return
	}
	list := append(slices.Clone(old), bytes.Clone(secret))
	slices.SortStableFunc(list, func(a, b []byte) int { return len(b) - len(a) })
	s.list.Store(&list)
}

// all are the secrets seen so far; the slice is never changed. It takes
// no lock: every request and reply of a recording asks.
func (s *seenSecrets) all() [][]byte {
	if l := s.list.Load(); l != nil {
		return *l
	}
	return nil
}

// learnFrom learns the secret arguments of a request (those Redact
// replaces), before they are replaced.
func (s *seenSecrets) learnFrom(request []byte) {
	if name, ok := peekName(request); ok && !nameIn(name, "AUTH", "HELLO", "MIGRATE", "CONFIG", "ACL") {
		return
	}
	c, err := ParseCommand(request)
	if err != nil {
		return
	}
	hide, _ := secretArgs(c)
	for i := range hide {
		a := c.Args[i]
		if c.Name == "ACL" && len(a) > 1 && strings.IndexByte("><#!", a[0]) >= 0 {
			a = a[1:] // a password rule: its value
		}
		s.learn(a)
	}
}

// hideInRequest replaces the secrets seen in every argument of a request
// but its command's name (a password that is a command's name is left
// there: the replay would send a command the build does not know).
func (s *seenSecrets) hideInRequest(request []byte, note string) ([]byte, string) {
	secrets := s.all()
	if !containsAny(request, secrets) {
		return request, note
	}
	c, err := ParseCommand(request)
	if err != nil || len(c.Args) < 2 {
		return request, note
	}
	args := slices.Clone(c.Args)
	changed := false
	for i := 1; i < len(args); i++ {
		if out, ok := hideSeen(args[i], secrets, false); ok {
			args[i], changed = out, true
		}
	}
	if !changed {
		return request, note
	}
	return AppendCommand(nil, args...), joinNotes(note, seenNote)
}

// hideInReply replaces the secrets seen in every string of a reply
// (simple and bulk strings, errors, verbatim strings, in aggregates and
// attributes). Numbers are left as they are: a reply's integer cannot
// become a marker and stay one.
func (s *seenSecrets) hideInReply(response []byte, note string) ([]byte, string) {
	secrets := s.all()
	if !containsAny(response, secrets) {
		return response, note
	}
	v, err := Parse(response)
	if err != nil {
		return response, note
	}
	if !mapStrings(&v, func(b []byte) []byte {
		out, _ := hideSeen(b, secrets, false)
		return out
	}) {
		return response, note
	}
	return v.Append(nil), joinNotes(note, seenNote)
}

// containsAny says whether b holds any of the secrets.
func containsAny(b []byte, secrets [][]byte) bool {
	for _, s := range secrets {
		if bytes.Contains(b, s) {
			return true
		}
	}
	return false
}

// hideSeen replaces the secrets in b with Redacted, in one pass from the
// left, the longest secret first where several start at one place: b
// whole when it is a secret; inside b, each secret at least
// MinSecretInside long, and in words (raw bytes, cut at ASCII spaces)
// shorter ones that are a whole word. The marker already in b is kept as
// it is, so that redacting twice changes nothing (a replay's reply to
// "ECHO <redacted>" compares equal to the recording's), even for a secret
// the marker holds ("dact").
func hideSeen(b []byte, secrets [][]byte, words bool) ([]byte, bool) {
	if len(secrets) == 0 || len(b) == 0 {
		return b, false
	}
	for _, s := range secrets {
		if bytes.Equal(b, s) {
			return []byte(Redacted), true
		}
	}
	if !containsAny(b, secrets) {
		return b, false
	}
	var out []byte
	changed := false
	for i := 0; i < len(b); {
		if bytes.HasPrefix(b[i:], []byte(Redacted)) {
			out = append(out, Redacted...)
			i += len(Redacted)
			continue
		}
		n := 0
		for _, s := range secrets {
			if bytes.HasPrefix(b[i:], s) && (len(s) >= MinSecretInside || words && isWord(b, i, i+len(s))) {
				n = len(s)
				break
			}
		}
		if n == 0 {
			out = append(out, b[i])
			i++
			continue
		}
		out = append(out, Redacted...)
		i += n
		changed = true
	}
	if !changed {
		return b, false
	}
	return out, true
}

// isWord says whether b[i:j] is a whole word: ASCII space (or either end)
// on both sides.
func isWord(b []byte, i, j int) bool {
	return (i == 0 || isSpace(b[i-1])) && (j == len(b) || isSpace(b[j]))
}

// joinNotes joins two redaction notes, either of which may be empty.
func joinNotes(a, b string) string {
	if a == "" || a == b {
		return b
	}
	if b == "" {
		return a
	}
	return a + ", " + b
}
