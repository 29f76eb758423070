package axum

import (
	"bytes"
	"strings"

	"github.com/kavach-dev/kavach"
)

var (
	_ kavach.ReplyRedactor = Codec{}
	_ kavach.RawRedactor   = Codec{}
)

// DefaultSecretParams are the query parameters whose values are always
// redacted on record.
var DefaultSecretParams = []string{"token", "api_key", "access_token"}

func (c Codec) secretParams() []string {
	return append(append([]string(nil), DefaultSecretParams...), c.SecretParams...)
}

// secretResponseHeaders are redacted in responses.
var secretResponseHeaders = map[string]bool{"set-cookie": true}

// ReplyMayHoldSecret is false: responses are redacted without their
// request.
func (Codec) ReplyMayHoldSecret([]byte) bool { return false }

// RedactReply replaces the values of Set-Cookie headers and of secret
// query parameters in the response's head (a Location header); the body is
// left alone, so the framing holds.
func (c Codec) RedactReply(_, response []byte) ([]byte, string) {
	out, what := redactLines(response, secretResponseHeaders, true)
	if red, ok := redactHeadParams(out, c.secretParams()); ok {
		out = red
		what = append(what, "secret query parameters")
	}
	if what == nil {
		return response, ""
	}
	return out, strings.Join(what, ", ")
}

// RedactRaw redacts by pattern in bytes the codec could not frame: in
// every line that looks like a header of a secret name, however spaced
// ("Authorization : Bearer x"), the value; and every secret query
// parameter's value anywhere in the bytes.
func (c Codec) RedactRaw(data []byte, request bool) ([]byte, string) {
	names := secretHeaders
	if !request {
		names = secretResponseHeaders
	}
	out, what := redactLines(data, names, false)
	if red, ok := redactParams(out, c.secretParams()); ok {
		out = red
		what = append(what, "secret query parameters")
	}
	if what == nil {
		return data, ""
	}
	return out, strings.Join(what, ", ") + " in unframable bytes"
}

// redactLines replaces the value of each header line whose name (spaces
// around it ignored, any case) is in names; headOnly stops at the end of
// the head. It returns what it replaced.
func redactLines(data []byte, names map[string]bool, headOnly bool) ([]byte, []string) {
	var out []byte
	var what []string
	rest := data
	done := 0
	for len(rest) > 0 {
		line := rest
		next := len(rest)
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, next = rest[:i+1], i+1
		}
		body := bytes.TrimRight(line, "\r\n")
		if headOnly && len(body) == 0 && done > 0 {
			break // the blank line: the body follows
		}
		if colon := bytes.IndexByte(body, ':'); colon > 0 {
			name := strings.ToLower(strings.TrimSpace(string(body[:colon])))
			if names[name] && strings.TrimSpace(string(body[colon+1:])) != Redacted {
				if out == nil {
					out = append([]byte(nil), data[:done]...)
				}
				out = append(out, body[:colon+1]...)
				out = append(out, " "+Redacted...)
				out = append(out, line[len(body):]...)
				what = append(what, strings.TrimSpace(string(body[:colon]))+" header")
				done += next
				rest = rest[next:]
				continue
			}
		}
		if out != nil {
			out = append(out, line...)
		}
		done += next
		rest = rest[next:]
	}
	if out == nil {
		return data, nil
	}
	return append(out, rest...), what
}

// redactHeadParams is redactParams over the head of a message only.
func redactHeadParams(msg []byte, names []string) ([]byte, bool) {
	end := bytes.Index(msg, []byte("\r\n\r\n"))
	if end < 0 {
		end = len(msg)
	}
	head, ok := redactParams(msg[:end], names)
	if !ok {
		return msg, false
	}
	return append(head, msg[end:]...), true
}

// RedactedParam is what a secret query parameter's value is replaced with:
// Redacted, percent-encoded, so that the request line stays valid and the
// service reads the value as Redacted.
const RedactedParam = "%3Credacted%3E"

// redactParams replaces the value of each query parameter named in names
// (any case), wherever "?NAME=" or "&NAME=" (or ";NAME=") appears, up to
// the next '&', '#', ';', quote or white space, with RedactedParam.
func redactParams(b []byte, names []string) ([]byte, bool) {
	lower := asciiLower(b)
	var out []byte
	last := 0
	for i := 0; i < len(b); i++ {
		if c := b[i]; c != '?' && c != '&' && c != ';' {
			continue
		}
		for _, n := range names {
			key := append([]byte(strings.ToLower(n)), '=')
			if !bytes.HasPrefix(lower[i+1:], key) {
				continue
			}
			start := i + 1 + len(key)
			end := start
			for end < len(b) && bytes.IndexByte([]byte("&#; \t\r\n\"'"), b[end]) < 0 {
				end++
			}
			if end == start || string(b[start:end]) == RedactedParam {
				break
			}
			out = append(append(out, b[last:start]...), RedactedParam...)
			last = end
			i = end - 1
			break
		}
	}
	if out == nil {
		return b, false
	}
	return append(out, b[last:]...), true
}

// asciiLower lower-cases ASCII letters only, so that offsets stay those of
// b (bytes.ToLower rewrites invalid UTF-8).
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}
