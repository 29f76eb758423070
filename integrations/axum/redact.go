package axum

import (
	"bytes"
	"fmt"
	"strings"
)

// DefaultSecretParams are the names whose values are always redacted on
// record, compared without case: as query parameters (in the request
// line, a Location header, a form body) and as the members of JSON
// bodies, in requests and responses alike.
var DefaultSecretParams = []string{
	"token", "access_token", "refresh_token", "id_token", "session_token", "auth_token",
	"api_key", "apikey", "password", "passwd", "pwd", "passphrase", "secret", "client_secret",
}

func (c Integration) secretParams() []string {
	return append(append([]string(nil), DefaultSecretParams...), c.SecretParams...)
}

// bodyNames are the names of secret body members: the secret parameters
// and the secret headers' names (a service may echo its request's headers
// in a JSON body).
func (c Integration) bodyNames() []string {
	names := c.secretParams()
	for n := range secretHeaders {
		names = append(names, n)
	}
	return names
}

// headerNames are the secret header names (lower case), with the names
// added (SecretParams) as headers too; response says whether Set-Cookie is
// one (a response may also echo a request's credentials).
func (c Integration) headerNames(response bool) map[string]bool {
	names := make(map[string]bool, len(secretHeaders)+len(c.SecretParams)+1)
	for n := range secretHeaders {
		names[n] = true
	}
	for _, n := range c.SecretParams {
		names[strings.ToLower(n)] = true
	}
	if response {
		names["set-cookie"] = true
	}
	return names
}

// ReplyMayHoldSecret is false: responses are redacted without their
// request.
func (Integration) ReplyMayHoldSecret([]byte) bool { return false }

// RedactReply replaces, in a response, the values of Set-Cookie and of
// every secret request header it echoes (Authorization, X-Auth-Token...),
// of secret query parameters in its head (a Location header), and of
// secret members of a JSON body (the body re-framed to its new length).
func (c Integration) RedactReply(_, response []byte) ([]byte, string) {
	out, what := redactLines(response, c.headerNames(true), true)
	if red, ok := redactHeadParams(out, c.secretParams()); ok {
		out = red
		what = append(what, "secret query parameters")
	}
	if red, ok := redactBody(out, false, c.bodyNames()); ok {
		out = red
		what = append(what, "secret body fields")
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
func (c Integration) RedactRaw(data []byte, request bool) ([]byte, string) {
	out, what := redactLines(data, c.headerNames(!request), false)
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

// redactBody replaces the values of secret members in a message's body:
// string members of a JSON body, and parameters of a form body
// (application/x-www-form-urlencoded). The body is framed again: its
// Content-Length set to the new length, a chunked body sent as one chunk.
// A message that does not parse, or holds no such member, is unchanged.
func redactBody(msg []byte, request bool, names []string) ([]byte, bool) {
	end := bytes.Index(msg, []byte("\r\n\r\n"))
	if end < 0 || end+4 == len(msg) {
		return msg, false
	}
	m, err := Parse(msg, request)
	if err != nil || len(m.Body) == 0 {
		return msg, false
	}
	var body []byte
	ok := false
	if t := bytes.TrimLeft(m.Body, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		body, ok = redactJSONMembers(m.Body, names)
	} else if strings.HasPrefix(strings.ToLower(m.Header("Content-Type")), "application/x-www-form-urlencoded") {
		var red []byte
		if red, ok = redactParams(append([]byte("&"), m.Body...), names); ok {
			body = red[1:]
		}
	}
	if !ok {
		return msg, false
	}
	head := msg[:end+2] // the head's lines, each with its CRLF
	var out []byte
	chunked := strings.EqualFold(m.Header("Transfer-Encoding"), "chunked")
	for len(head) > 0 {
		i := bytes.Index(head, []byte("\r\n"))
		line := head[:i+2]
		head = head[i+2:]
		if name, _, found := bytes.Cut(line, []byte(":")); found && !chunked && strings.EqualFold(strings.TrimSpace(string(name)), "content-length") {
			line = fmt.Appendf(nil, "%s: %d\r\n", name, len(body))
		}
		out = append(out, line...)
	}
	out = append(out, "\r\n"...)
	if chunked {
		out = fmt.Appendf(out, "%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	} else {
		out = append(out, body...)
	}
	return out, true
}

// redactJSONMembers replaces with Redacted the string value of each member
// of a JSON text whose name is in names (any case), at any depth. It scans
// the text as JSON does, so that a name is a member's name, never words
// inside a string.
func redactJSONMembers(b []byte, names []string) ([]byte, bool) {
	var out []byte
	last := 0
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		end := stringEnd(b, i)
		if end < 0 {
			break
		}
		// A member's name is followed by a colon.
		j := end + 1
		for j < len(b) && isJSONSpace(b[j]) {
			j++
		}
		if j < len(b) && b[j] == ':' && nameIn(string(b[i+1:end]), names) {
			k := j + 1
			for k < len(b) && isJSONSpace(b[k]) {
				k++
			}
			if k < len(b) && b[k] == '"' {
				vend := stringEnd(b, k)
				if vend < 0 {
					break
				}
				if string(b[k+1:vend]) != Redacted {
					out = append(append(out, b[last:k+1]...), Redacted...)
					last = vend
				}
				i = vend
				continue
			}
		}
		i = end
	}
	if out == nil {
		return b, false
	}
	return append(out, b[last:]...), true
}

// stringEnd is the index of the quote closing the JSON string opening at
// b[start], or -1.
func stringEnd(b []byte, start int) int {
	for i := start + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func nameIn(name string, names []string) bool {
	for _, n := range names {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	return false
}
