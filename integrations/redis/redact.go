package redis

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"regexp"
	"strings"
)

// secretConfig are the configuration parameters whose values are secrets.
var secretConfig = map[string]bool{"requirepass": true, "masterauth": true}

// ReplyMayHoldSecret: CONFIG GET (requirepass, masterauth), ACL LIST and
// ACL GETUSER (password hashes), and any command with a secret argument
// (its error replies may echo it).
func (Integration) ReplyMayHoldSecret(request []byte) bool {
	name, ok := peekName(request)
	return !ok || nameIn(name, "AUTH", "HELLO", "MIGRATE", "CONFIG", "ACL")
}

// RedactReply replaces secrets in a reply: the values of requirepass and
// masterauth in a CONFIG GET reply (an array of pairs in RESP2, a map in
// RESP3), the password hashes of ACL LIST and ACL GETUSER, and, in a
// reply to a command with a secret argument (AUTH, ACL SETUSER >pass...),
// every copy of that argument (an error echoing the rule). A reply it
// cannot parse is returned unchanged (the proxy redacts unframable bytes by
// pattern).
func (Integration) RedactReply(request, response []byte) ([]byte, string) {
	if request == nil {
		return response, ""
	}
	c, err := ParseCommand(request)
	if err != nil || len(c.Args) < 2 {
		return response, ""
	}
	v, err := Parse(response)
	if err != nil {
		return response, ""
	}
	sub := strings.ToUpper(string(c.Args[1]))
	changed := false
	var what string
	switch {
	case c.Name == "CONFIG" && sub == "GET":
		changed = redactPairs(&v, func(key []byte) bool { return secretConfig[strings.ToLower(string(key))] })
		what = "CONFIG GET secret value"
	case c.Name == "ACL" && sub == "LIST":
		changed = mapStrings(&v, func(s []byte) []byte { return passwordHash.ReplaceAll(s, []byte("#"+Redacted)) })
		what = "ACL LIST password hash"
	case c.Name == "ACL" && sub == "GETUSER":
		changed = redactPairs(&v, func(key []byte) bool { return strings.EqualFold(string(key), "passwords") })
		what = "ACL GETUSER password hashes"
	}
	// An echo of a secret argument, anywhere in the reply.
	hide, _ := secretArgs(c)
	for i := range hide {
		for _, secret := range secretForms(c.Args[i]) {
			if mapStrings(&v, func(s []byte) []byte { return bytes.ReplaceAll(s, secret, []byte(Redacted)) }) {
				changed, what = true, "a secret argument echoed in the reply"
			}
		}
	}
	if !changed {
		return response, ""
	}
	return v.Append(nil), what
}

// secretForms are the strings a secret argument may be echoed as: the
// argument, and for an ACL rule (>pass, #hash) its value too. Empty and
// one-byte values are left out (replacing every such byte would say
// nothing and wreck the reply).
func secretForms(arg []byte) [][]byte {
	var out [][]byte
	if len(arg) > 1 {
		out = append(out, arg)
	}
	if len(arg) > 2 && strings.IndexByte("><#!", arg[0]) >= 0 {
		out = append(out, arg[1:])
	}
	return out
}

// passwordHash is a password rule with its SHA-256 hash, as ACL LIST
// shows it.
var passwordHash = regexp.MustCompile(`#[0-9a-fA-F]{64}`)

// redactPairs replaces, in a map or a flat array of pairs (at the top or
// nested one level), the value of each key for which secret is true; a
// value that is a list has its elements replaced. It reports a change.
func redactPairs(v *Value, secret func(key []byte) bool) bool {
	changed := false
	switch v.Kind {
	case KindMap, KindArray:
		for i := 0; i+1 < len(v.Elems); i += 2 {
			k := v.Elems[i]
			if (k.Kind == KindBulk || k.Kind == KindSimple || k.Kind == KindVerbatim) && secret(k.Str) {
				if replaceLeaves(&v.Elems[i+1]) {
					changed = true
				}
			}
		}
		// CONFIG GET of several patterns in RESP3 nests nothing, but an
		// array of maps (a proxy's fan-out) does.
		for i := range v.Elems {
			if e := &v.Elems[i]; e.Kind == KindMap {
				changed = redactPairs(e, secret) || changed
			}
		}
	}
	return changed
}

// replaceLeaves replaces every non-empty string in v with Redacted.
func replaceLeaves(v *Value) bool {
	return mapStrings(v, func(s []byte) []byte {
		if len(s) == 0 {
			return s
		}
		return []byte(Redacted)
	})
}

// mapStrings applies f to every string in v (simple and bulk strings,
// errors, verbatim strings), recursively, and reports a change.
func mapStrings(v *Value, f func([]byte) []byte) bool {
	changed := false
	switch v.Kind {
	case KindSimple, KindError, KindBulk, KindBulkError, KindVerbatim:
		if v.Str != nil {
			if s := f(v.Str); !bytes.Equal(s, v.Str) {
				if v.Kind == KindSimple || v.Kind == KindError {
					s = bytes.ReplaceAll(bytes.ReplaceAll(s, []byte("\r"), nil), []byte("\n"), nil)
				}
				v.Str, changed = s, true
			}
		}
	case KindArray, KindSet, KindPush, KindMap:
		for i := range v.Elems {
			changed = mapStrings(&v.Elems[i], f) || changed
		}
	}
	for i := range v.Attrs {
		changed = mapStrings(&v.Attrs[i], f) || changed
	}
	return changed
}

// rawSecretWords are the words after which raw bytes may carry a secret.
var rawSecretWords = []string{"AUTH", "AUTH2", "HELLO", "REQUIREPASS", "MASTERAUTH", "SETUSER", "MIGRATE"}

// RedactRaw redacts by pattern in bytes the codec could not frame: from
// the first word that may introduce a secret (AUTH, AUTH2, HELLO,
// REQUIREPASS, MASTERAUTH, SETUSER, MIGRATE, any case) to the end of the
// bytes, every word but RESP headers that frame what follows ("*3", "$5":
// see isFrameHeader) and the words themselves becomes Redacted; and in any case every ACL password rule ("#" and 64 hex
// digits). It errs towards replacing too much: these bytes are garbage to
// the codec, kept only to be sent again as they were.
func (Integration) RedactRaw(data []byte, request bool) ([]byte, string) {
	out := passwordHash.ReplaceAll(data, []byte("#"+Redacted))
	note := ""
	if !bytes.Equal(out, data) {
		note = "password hashes in unframable bytes"
	}
	upper := asciiUpper(out)
	first := -1
	for _, w := range rawSecretWords {
		for off := 0; ; {
			i := bytes.Index(upper[off:], []byte(w))
			if i < 0 {
				break
			}
			i += off
			end := i + len(w)
			if (i == 0 || !isWordByte(upper[i-1])) && (end == len(upper) || !isWordByte(upper[end])) {
				if first < 0 || i < first {
					first = i
				}
				break
			}
			off = i + 1
		}
	}
	if first < 0 {
		return out, note
	}
	res := append([]byte(nil), out[:first]...)
	rest := out[first:]
	for len(rest) > 0 {
		// Separators as they are; each word that is not a RESP header or
		// a secret-introducing word becomes Redacted.
		i := 0
		for i < len(rest) && isSpace(rest[i]) {
			i++
		}
		res = append(res, rest[:i]...)
		rest = rest[i:]
		j := 0
		for j < len(rest) && !isSpace(rest[j]) {
			j++
		}
		if j == 0 {
			continue
		}
		word := rest[:j]
		rest = rest[j:]
		if isFrameHeader(word, rest, request) || isSecretWord(word) {
			res = append(res, word...)
		} else {
			res = append(res, Redacted...)
		}
	}
	return res, "arguments after a secret word in unframable bytes"
}

// isFrameHeader says whether word, followed by rest, is a RESP header
// that frames what follows rather than a value: "*N" followed by CRLF and
// a bulk string's "$"; "$N" followed by CRLF, N bytes and CRLF; "$-1" and
// "*-1" (nulls) in a reply only, followed by CRLF. Anything else that
// merely starts with "$" or "*" ("$2024-11-30", "$5" with no five bytes
// after it) is a word, which may be a password.
func isFrameHeader(word, rest []byte, request bool) bool {
	if len(word) < 2 || (word[0] != '*' && word[0] != '$') || !bytes.HasPrefix(rest, []byte("\r\n")) {
		return false
	}
	digits := word[1:]
	if string(digits) == "-1" {
		return !request
	}
	n := 0
	for _, c := range digits {
		if c < '0' || c > '9' || n > 1<<30 {
			return false
		}
		n = n*10 + int(c-'0')
	}
	if word[0] == '*' {
		return len(rest) > 2 && rest[2] == '$'
	}
	return len(rest) >= n+4 && string(rest[n+2:n+4]) == "\r\n"
}

func isSecretWord(w []byte) bool {
	for _, s := range rawSecretWords {
		if strings.EqualFold(string(w), s) {
			return true
		}
	}
	return false
}

func isWordByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '-'
}

// secretFlags are the launch arguments whose value is a secret.
var secretFlags = map[string]bool{"--requirepass": true, "--masterauth": true}

// RedactArgs replaces the secrets in a build's launch arguments before they
// are written to a fixture's header: the value of --requirepass and
// --masterauth, and the password rules of --user (>pass, <pass, #hash,
// !hash), whether each is its own argument or written inside one
// ("--requirepass S3cret", "--user bob on >pw": Redis reads an argument
// starting with -- as a whole configuration line). The second result says
// whether anything was replaced.
func RedactArgs(args []string) ([]string, bool) {
	out := append([]string(nil), args...)
	changed := false
	inUser := false
	for i := 0; i < len(out); i++ {
		a := out[i]
		if strings.HasPrefix(a, "--") {
			words := strings.Fields(a)
			if len(words) == 0 {
				continue
			}
			name := strings.ToLower(words[0])
			inUser = name == "--user"
			if len(words) > 1 {
				// A directive and its values in one argument.
				switch {
				case secretFlags[name]:
					if strings.Join(words[1:], " ") != Redacted {
						out[i], changed = words[0]+" "+Redacted, true
					}
				case inUser:
					if red, ok := redactRules(words[1:]); ok {
						out[i], changed = words[0]+" "+red, true
					}
				}
				continue
			}
			if secretFlags[name] && i+1 < len(out) && out[i+1] != Redacted && !strings.HasPrefix(out[i+1], "--") {
				out[i+1], changed = Redacted, true
				i++
			}
			continue
		}
		if inUser {
			if red, ok := redactRules(strings.Fields(a)); ok {
				out[i], changed = red, true
			}
		}
	}
	return out, changed
}

// redactRules replaces the password rules among ACL rule words (>pass,
// <pass, #hash, !hash) with the rule's sign and Redacted, and joins the
// words with spaces; the second result says whether any was replaced.
func redactRules(words []string) (string, bool) {
	changed := false
	for i, w := range words {
		if len(w) > 1 && strings.IndexByte("><#!", w[0]) >= 0 && w[1:] != Redacted {
			words[i], changed = w[:1]+Redacted, true
		}
	}
	return strings.Join(words, " "), changed
}

// UnredactArgs puts secret back where RedactArgs left Redacted: as the
// value of --requirepass and --masterauth, and in the password rules of
// --user (>secret, <secret; #hash and !hash get the secret's SHA-256).
// Nowhere else: "--loglevel <redacted>" stays as it is (and fails the
// start with Redacted quoted, not the secret).
func UnredactArgs(args []string, secret string) []string {
	out := append([]string(nil), args...)
	hash := fmt.Sprintf("%x", sha256.Sum256([]byte(secret)))
	rule := func(w string) string {
		if len(w) != len(Redacted)+1 || w[1:] != Redacted {
			return w
		}
		switch w[0] {
		case '>', '<':
			return w[:1] + secret
		case '#', '!':
			return w[:1] + hash
		}
		return w
	}
	rules := func(s string) string {
		words := strings.Fields(s)
		for i, w := range words {
			words[i] = rule(w)
		}
		return strings.Join(words, " ")
	}
	inUser := false
	for i := 0; i < len(out); i++ {
		a := out[i]
		if strings.HasPrefix(a, "--") {
			words := strings.Fields(a)
			if len(words) == 0 {
				continue
			}
			name := strings.ToLower(words[0])
			inUser = name == "--user"
			switch {
			case len(words) == 2 && secretFlags[name] && words[1] == Redacted:
				out[i] = words[0] + " " + secret
			case len(words) > 1 && inUser:
				out[i] = words[0] + " " + rules(strings.Join(words[1:], " "))
			case len(words) == 1 && secretFlags[name] && i+1 < len(out) && out[i+1] == Redacted:
				out[i+1] = secret
				i++
			}
			continue
		}
		if inUser && strings.Contains(a, Redacted) {
			out[i] = rules(a)
		}
	}
	return out
}

// Resync goes on as Redis does after a request it cannot parse: a line
// that does not start a multibulk ("*") is an inline command to Redis,
// which answers it (an unknown command, say) and reads the next line, so
// framing resumes after that line. A broken multibulk makes Redis answer a
// protocol error and close the connection: the rest is raw. Replies that
// cannot be framed leave the rest raw.
func (Integration) Resync(data []byte, request bool) (int, bool) {
	if !request || len(data) == 0 || data[0] == '*' {
		return 0, false
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, true
	}
	return len(data), true
}

// asciiUpper upper-cases ASCII letters only, so that offsets stay those of
// b (bytes.ToUpper rewrites invalid UTF-8).
func asciiUpper(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		out[i] = c
	}
	return out
}
