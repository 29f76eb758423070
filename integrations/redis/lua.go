package redis

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kavach-dev/kavach"
)

// A script's Lua text is read only as far as finding the commands it
// calls: redis.call, redis.pcall, server.call and server.pcall with the
// command written as a string literal, and each call's arguments (Lua
// expressions, kept as written). Comments and strings are skipped as Lua
// reads them, so a call written inside a string or a comment is none.

// luaCall is one call site of a script.
type luaCall struct {
	fn        string // "redis.call", "server.pcall", ...
	name      string // the command as written in the literal
	nameStart int    // the literal's contents, [nameStart, nameEnd)
	nameEnd   int
	args      [][2]int // each argument after the command, as written
	close     int      // the position of the call's ")"
}

// luaToken is a token of Lua text: a name, a string, a number, or one
// punctuation byte.
type luaToken struct {
	kind       byte // 'n' name, 's' string, '0' number, or the punctuation byte itself
	start, end int
	// plain: a short string without escapes, whose contents are
	// text[start+1 : end-1].
	plain bool
}

// luaTokens splits Lua text into tokens, skipping spaces and comments.
// It fails on an unterminated string, long string or comment.
func luaTokens(src string) ([]luaToken, error) {
	var out []luaToken
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(src[i:], "--"):
			if n := longBracket(src[i+2:]); n >= 0 {
				end := strings.Index(src[i+2+n+2:], "]"+strings.Repeat("=", n)+"]")
				if end < 0 {
					return nil, fmt.Errorf("a comment at byte %d is not closed", i)
				}
				i += 2 + n + 2 + end + n + 2
				continue
			}
			if end := strings.IndexByte(src[i:], '\n'); end >= 0 {
				i += end + 1
			} else {
				i = len(src)
			}
		case c == '[' && longBracket(src[i:]) >= 0:
			n := longBracket(src[i:])
			end := strings.Index(src[i+n+2:], "]"+strings.Repeat("=", n)+"]")
			if end < 0 {
				return nil, fmt.Errorf("a long string at byte %d is not closed", i)
			}
			j := i + n + 2 + end + n + 2
			out = append(out, luaToken{kind: 's', start: i, end: j})
			i = j
		case c == '\'' || c == '"':
			j, plain := i+1, true
			for ; j < len(src) && src[j] != c; j++ {
				if src[j] == '\n' {
					return nil, fmt.Errorf("a string at byte %d runs past its line", i)
				}
				if src[j] == '\\' {
					plain = false
					j++
				}
			}
			if j >= len(src) {
				return nil, fmt.Errorf("a string at byte %d is not closed", i)
			}
			out = append(out, luaToken{kind: 's', start: i, end: j + 1, plain: plain})
			i = j + 1
		case isNameStart(c):
			j := i + 1
			for j < len(src) && (isNameStart(src[j]) || '0' <= src[j] && src[j] <= '9') {
				j++
			}
			out = append(out, luaToken{kind: 'n', start: i, end: j})
			i = j
		case '0' <= c && c <= '9':
			j := i + 1
			for j < len(src) && (isNameStart(src[j]) || '0' <= src[j] && src[j] <= '9' || src[j] == '.' ||
				(src[j] == '-' || src[j] == '+') && (src[j-1] == 'e' || src[j-1] == 'E' || src[j-1] == 'p' || src[j-1] == 'P')) {
				j++
			}
			out = append(out, luaToken{kind: '0', start: i, end: j})
			i = j
		default:
			out = append(out, luaToken{kind: c, start: i, end: i + 1})
			i++
		}
	}
	return out, nil
}

func isNameStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// longBracket is the level of the long bracket s opens ("[[" 0, "[=[" 1,
// ...), or -1.
func longBracket(s string) int {
	if !strings.HasPrefix(s, "[") {
		return -1
	}
	n := 1
	for n < len(s) && s[n] == '=' {
		n++
	}
	if n < len(s) && s[n] == '[' {
		return n - 1
	}
	return -1
}

// luaCalls finds a script's call sites. It fails when the text cannot be
// read (an unterminated string or comment), or when a call's command is
// not a plain string literal (redis.call(cmd, ...)): such a script is
// left whole.
func luaCalls(src string) ([]luaCall, error) {
	toks, err := luaTokens(src)
	if err != nil {
		return nil, err
	}
	text := func(t luaToken) string { return src[t.start:t.end] }
	var out []luaCall
	for i := 0; i+2 < len(toks); i++ {
		if toks[i].kind != 'n' || toks[i+1].kind != '.' || toks[i+2].kind != 'n' {
			continue
		}
		lib, fn := text(toks[i]), text(toks[i+2])
		if (lib != "redis" && lib != "server") || (fn != "call" && fn != "pcall") {
			continue
		}
		if i > 0 && (toks[i-1].kind == '.' || toks[i-1].kind == ':') {
			continue // x.redis.call: not the library
		}
		if i+3 >= len(toks) || toks[i+3].kind != '(' {
			// redis.call'GET', or local c = redis.call: a call Kavach
			// cannot see.
			return nil, fmt.Errorf("%s.%s at byte %d is not called with parentheses", lib, fn, toks[i].start)
		}
		if i+4 >= len(toks) {
			return nil, fmt.Errorf("the call %s.%s at byte %d is not closed", lib, fn, toks[i].start)
		}
		name := toks[i+4]
		if name.kind != 's' || !name.plain {
			return nil, fmt.Errorf("the command of %s.%s at byte %d is not a plain string", lib, fn, toks[i].start)
		}
		if next := toks[i+5:]; len(next) == 0 || (next[0].kind != ',' && next[0].kind != ')') {
			return nil, fmt.Errorf("the command of %s.%s at byte %d is not a plain string", lib, fn, toks[i].start)
		}
		c := luaCall{fn: lib + "." + fn, name: src[name.start+1 : name.end-1], nameStart: name.start + 1, nameEnd: name.end - 1}
		// The arguments: expressions split at commas outside brackets,
		// up to the call's closing parenthesis.
		depth, j, argStart := 0, i+5, -1
		closed := false
		for ; j < len(toks) && !closed; j++ {
			t := toks[j]
			switch {
			case depth == 0 && t.kind == ')':
				if argStart >= 0 {
					c.args = append(c.args, [2]int{argStart, toks[j-1].end})
				}
				c.close, closed = t.start, true
			case depth == 0 && t.kind == ',':
				if argStart >= 0 {
					c.args = append(c.args, [2]int{argStart, toks[j-1].end})
				}
				argStart = -1
			default:
				if argStart < 0 {
					argStart = t.start
				}
				switch t.kind {
				case '(', '[', '{':
					depth++
				case ')', ']', '}':
					depth--
				}
			}
		}
		if !closed {
			return nil, fmt.Errorf("the call %s.%s at byte %d is not closed", lib, fn, toks[i].start)
		}
		out = append(out, c)
		i += 4
	}
	return out, nil
}

// ---------------------------------------------------------------------
// LOCAL TABLE, to be unified with integrations/redis/families.go (the
// command families of the top-level sibling variants, written on another
// branch) when the two meet: the families a script's call site is varied
// within. Keep it small; the shared table replaces it.
// ---------------------------------------------------------------------

// luaFamily is a family of commands that take the same arguments, or a
// part of them: a site calling one member is rewritten to call each other
// member. params are the Lua text given for each of the family's
// parameters when a site does not give it ("": the site must).
type luaFamily struct {
	params  []string
	members []luaMember
}

// luaMember is one command of a family: the family's parameters it
// takes, in order, and whether it writes.
type luaMember struct {
	name  string
	write bool
	takes []int
}

// luaRead and luaWrite are a family's member that reads or writes.
func luaRead(name string, takes ...int) luaMember  { return luaMember{name, false, takes} }
func luaWrite(name string, takes ...int) luaMember { return luaMember{name, true, takes} }

var luaFamilies = []luaFamily{
	// key, increment
	{[]string{"", "'1'"}, []luaMember{luaWrite("INCRBY", 0, 1), luaWrite("DECRBY", 0, 1), luaWrite("INCRBYFLOAT", 0, 1),
		luaWrite("INCR", 0), luaWrite("DECR", 0), luaRead("GET", 0), luaWrite("SET", 0, 1)}},
	// key, field, increment
	{[]string{"", "", "'1'"}, []luaMember{luaWrite("HINCRBY", 0, 1, 2), luaWrite("HINCRBYFLOAT", 0, 1, 2), luaWrite("HSET", 0, 1, 2),
		luaWrite("HSETNX", 0, 1, 2), luaRead("HGET", 0, 1), luaRead("HEXISTS", 0, 1), luaRead("HSTRLEN", 0, 1), luaWrite("HDEL", 0, 1)}},
	// key, value
	{[]string{"", "'kavach'"}, []luaMember{luaWrite("SET", 0, 1), luaWrite("SETNX", 0, 1), luaWrite("APPEND", 0, 1), luaWrite("GETSET", 0, 1),
		luaRead("GET", 0), luaRead("STRLEN", 0)}},
	// key, element
	{[]string{"", "'kavach'"}, []luaMember{luaWrite("LPUSH", 0, 1), luaWrite("RPUSH", 0, 1), luaWrite("LPUSHX", 0, 1), luaWrite("RPUSHX", 0, 1),
		luaWrite("LPOP", 0), luaWrite("RPOP", 0), luaRead("LLEN", 0)}},
	// key, member
	{[]string{"", "'kavach'"}, []luaMember{luaWrite("SADD", 0, 1), luaWrite("SREM", 0, 1), luaRead("SISMEMBER", 0, 1), luaRead("SCARD", 0),
		luaRead("SMEMBERS", 0)}},
	// key, increment or score, member
	{[]string{"", "'1'", "'kavach'"}, []luaMember{luaWrite("ZINCRBY", 0, 1, 2), luaWrite("ZADD", 0, 1, 2), luaRead("ZSCORE", 0, 2),
		luaRead("ZRANK", 0, 2), luaWrite("ZREM", 0, 2)}},
	// key, duration
	{[]string{"", "'100'"}, []luaMember{luaWrite("EXPIRE", 0, 1), luaWrite("PEXPIRE", 0, 1), luaWrite("PERSIST", 0), luaRead("TTL", 0),
		luaRead("PTTL", 0)}},
}

// luaWrites says whether a command writes, as far as luaFamilies know: ok
// is false for a command none of them has.
func luaWrites(name string) (write, ok bool) {
	for _, f := range luaFamilies {
		for _, m := range f.members {
			if strings.EqualFold(m.name, name) {
				return m.write, true
			}
		}
	}
	return false, false
}

// luaSites bounds how many call sites of one script are varied.
const luaSites = 16

// luaEdit is a script with one call site rewritten.
type luaEdit struct {
	text string
	what string
}

// siteEdits are the script with each call site's command varied within
// its families: its siblings of the same access first, then a read for
// a write and a write for a read, with the arguments the other command
// takes (the site's own, as written, else the family's defaults).
// Sites take turns: each has its first before any has its second.
//
// At most luaSites sites are varied (the first ones): each gives about
// ten copies of the script.
func siteEdits(src string, calls []luaCall) []luaEdit {
	var per [][]luaEdit
	for i, c := range calls[:min(len(calls), luaSites)] {
		seen := map[string]bool{src: true}
		var same, swapped []luaEdit
		for _, f := range luaFamilies {
			from := -1
			for k, m := range f.members {
				if strings.EqualFold(m.name, c.name) && len(m.takes) == len(c.args) {
					from = k
				}
			}
			if from < 0 {
				continue
			}
			params := slices.Clone(f.params)
			for k, p := range f.members[from].takes {
				params[p] = src[c.args[k][0]:c.args[k][1]]
			}
			for k, m := range f.members {
				if k == from || strings.EqualFold(m.name, c.name) {
					continue
				}
				text, ok := rewriteSite(src, c, f.members[from], m, params)
				if !ok || seen[text] {
					continue
				}
				seen[text] = true
				e := luaEdit{text: text}
				what := "a sibling"
				if m.write != f.members[from].write {
					what = "a read for the write"
					if m.write {
						what = "a write for the read"
					}
				}
				e.what = fmt.Sprintf("script site %d, %s(%q) → %q (%s)", i+1, c.fn, c.name, sameCase(m.name, c.name), what)
				if m.write == f.members[from].write {
					same = append(same, e)
				} else {
					swapped = append(swapped, e)
				}
			}
		}
		if l := append(same, swapped...); len(l) > 0 {
			per = append(per, l)
		}
	}
	var out []luaEdit
	for r, left := 0, true; left; r++ {
		left = false
		for _, l := range per {
			if r < len(l) {
				out = append(out, l[r])
				left = true
			}
		}
	}
	return out
}

// rewriteSite writes site c of src calling to instead of from, with the
// arguments to takes from params. A command with the same arguments is
// only renamed, the rest of the text kept byte for byte. ok is false when
// to needs a parameter the site does not give and the family has no
// default for.
func rewriteSite(src string, c luaCall, from, to luaMember, params []string) (string, bool) {
	name := sameCase(to.name, c.name)
	if slices.Equal(from.takes, to.takes) {
		return src[:c.nameStart] + name + src[c.nameEnd:], true
	}
	var b strings.Builder
	q := src[c.nameStart-1]
	b.WriteString(src[:c.nameStart-1])
	b.WriteByte(q)
	b.WriteString(name)
	b.WriteByte(q)
	for _, p := range to.takes {
		if params[p] == "" {
			return "", false
		}
		b.WriteString(", ")
		b.WriteString(params[p])
	}
	b.WriteString(src[c.close:])
	return b.String(), true
}

// sameCase writes name in the case the script wrote like: lower case
// when like is all lower case.
func sameCase(name, like string) string {
	if like == strings.ToLower(like) {
		return strings.ToLower(name)
	}
	return name
}

// scriptText finds the Lua text of a request that carries one: EVAL and
// EVAL_RO (the script, argument 1) and FUNCTION LOAD (the library, its
// last argument). i is the text's index in c.Args; ok is false for any
// other request.
func scriptText(c Command) (i int, ok bool) {
	switch {
	case (c.Name == "EVAL" || c.Name == "EVAL_RO") && len(c.Args) >= 3:
		return 1, true
	case c.Name == "FUNCTION" && len(c.Args) >= 3 && strings.EqualFold(string(c.Args[1]), "LOAD"):
		return len(c.Args) - 1, true
	}
	return 0, false
}

// luaScript is the Lua text a request runs, found in the request or in
// an earlier step, and how the request is sent with another text in its
// place.
type luaScript struct {
	src string
	// reg is the function an FCALL calls, as its library src registers
	// it; nil for a script (EVAL, EVALSHA) and a FUNCTION LOAD request.
	reg *luaReg
	// from says where src was found, for a person: "" in the request;
	// how, how a changed copy is run (send).
	from, how string
	// send is the request run with text in place of src: the requests
	// to send first (the load of a script that is not in the request),
	// then the request.
	send func(text string) (setup [][]byte, request []byte)
}

// findScript finds the script a request runs: in the request (EVAL,
// EVAL_RO, FUNCTION LOAD), or in the requests sent before it (earlier,
// oldest first; the latest that fits is taken): an EVALSHA's in the
// SCRIPT LOAD or EVAL whose script has its sha1, an FCALL's in the
// FUNCTION LOAD whose library registers its function (names compared in
// any case, as Redis does). ok is false for a request that runs no
// script, and for a runner whose script is not found: why then says so.
func findScript(c Command, earlier [][]byte) (s luaScript, why string, ok bool) {
	if i, ok := scriptText(c); ok {
		return luaScript{src: string(c.Args[i]), send: func(text string) ([][]byte, []byte) {
			b := slices.Clone(c.Args)
			b[i] = []byte(text)
			return nil, AppendCommand(nil, b...)
		}}, "", true
	}
	if len(c.Args) < 3 {
		return luaScript{}, "", false
	}
	switch c.Name {
	case "EVALSHA", "EVALSHA_RO":
		sha := strings.ToLower(string(c.Args[1]))
		for k := len(earlier) - 1; k >= 0; k-- {
			e, err := ParseCommand(earlier[k])
			if err != nil {
				continue
			}
			var text []byte
			var from string
			switch {
			case e.Name == "SCRIPT" && len(e.Args) == 3 && strings.EqualFold(string(e.Args[1]), "LOAD"):
				text, from = e.Args[2], "loaded by an earlier SCRIPT LOAD"
			case (e.Name == "EVAL" || e.Name == "EVAL_RO") && len(e.Args) >= 3:
				text, from = e.Args[1], "sent by an earlier "+e.Name
			default:
				continue
			}
			if sha1Hex(text) != sha {
				continue
			}
			return luaScript{src: string(text), from: from, how: "the changed script loaded by SCRIPT LOAD and run by its sha1", send: func(t string) ([][]byte, []byte) {
				load := AppendCommand(nil, []byte("SCRIPT"), []byte("LOAD"), []byte(t))
				return [][]byte{load}, AppendCommand(nil, append([][]byte{c.Args[0], []byte(sha1Hex([]byte(t)))}, c.Args[2:]...)...)
			}}, "", true
		}
		return luaScript{}, "not in the request, nor sent by an earlier SCRIPT LOAD or EVAL", false
	case "FCALL", "FCALL_RO":
		var unread error
		for k := len(earlier) - 1; k >= 0; k-- {
			e, err := ParseCommand(earlier[k])
			if err != nil || e.Name != "FUNCTION" || len(e.Args) < 3 || !strings.EqualFold(string(e.Args[1]), "LOAD") {
				continue
			}
			lib := string(e.Args[len(e.Args)-1])
			regs, err := luaRegistrations(lib)
			if err != nil {
				if unread == nil {
					unread = err
				}
				continue
			}
			for _, r := range regs {
				if !strings.EqualFold(r.name, string(c.Args[1])) {
					continue
				}
				return luaScript{src: lib, reg: &r, from: "its library loaded by an earlier FUNCTION LOAD", how: "the changed library loaded by FUNCTION LOAD REPLACE",
					send: func(t string) ([][]byte, []byte) {
						load := AppendCommand(nil, []byte("FUNCTION"), []byte("LOAD"), []byte("REPLACE"), []byte(t))
						return [][]byte{load}, AppendCommand(nil, c.Args...)
					}}, "", true
			}
		}
		why = "not in the request, nor registered by an earlier FUNCTION LOAD"
		if unread != nil {
			why += fmt.Sprintf(" that Kavach can read (an earlier library: %v)", unread)
		}
		return luaScript{}, why, false
	}
	return luaScript{}, "", false
}

func sha1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// luaReg is a function a library registers: redis.register_function
// (or server.register_function) called with its name and callback, or
// with a table of named arguments (function_name, callback, flags).
type luaReg struct {
	name string
	// cb is the callback as written; inline: a function written in
	// place, whose call sites are within cb.
	cb     [2]int
	inline bool
	// noWrites: its flags name no-writes.
	noWrites bool
}

// luaRegistrations finds the functions a library registers. It fails
// when the text cannot be read, or a registration's name is not a plain
// string literal (or its call is not one Kavach can read): such a
// library's functions cannot be told apart, and it is not wrapped.
func luaRegistrations(src string) ([]luaReg, error) {
	toks, err := luaTokens(src)
	if err != nil {
		return nil, err
	}
	text := func(t luaToken) string { return src[t.start:t.end] }
	list := func(open int, seps string) ([][2]int, int) { return luaList(toks, open, seps) }
	span := func(e [2]int) [2]int { return [2]int{toks[e[0]].start, toks[e[1]-1].end} }
	plainName := func(e [2]int) (string, bool) {
		if e[1]-e[0] != 1 || toks[e[0]].kind != 's' || !toks[e[0]].plain {
			return "", false
		}
		return src[toks[e[0]].start+1 : toks[e[0]].end-1], true
	}
	var out []luaReg
	for i := 0; i+2 < len(toks); i++ {
		if toks[i].kind != 'n' || toks[i+1].kind != '.' || toks[i+2].kind != 'n' || text(toks[i+2]) != "register_function" {
			continue
		}
		if lib := text(toks[i]); lib != "redis" && lib != "server" || i > 0 && (toks[i-1].kind == '.' || toks[i-1].kind == ':') {
			continue
		}
		at := toks[i].start
		j := i + 3
		if j < len(toks) && toks[j].kind == '(' && j+1 < len(toks) && toks[j+1].kind == '{' {
			j++ // register_function({...})
		}
		if j >= len(toks) || toks[j].kind != '(' && toks[j].kind != '{' {
			return nil, fmt.Errorf("register_function at byte %d is not called with parentheses or a table", at)
		}
		r := luaReg{}
		named := false
		if toks[j].kind == '{' {
			fields, close := list(j, ",;")
			if close < 0 || toks[j-1].kind == '(' && (close+1 >= len(toks) || toks[close+1].kind != ')') {
				return nil, fmt.Errorf("the registration at byte %d cannot be read (not closed, or an argument empty)", at)
			}
			for _, f := range fields {
				if f[1]-f[0] < 3 || toks[f[0]].kind != 'n' || toks[f[0]+1].kind != '=' {
					return nil, fmt.Errorf("the registration at byte %d has a field Kavach cannot read", at)
				}
				v := [2]int{f[0] + 2, f[1]}
				switch text(toks[f[0]]) {
				case "function_name":
					r.name, named = plainName(v)
				case "callback":
					r.cb = span(v)
					r.inline = text(toks[v[0]]) == "function" && text(toks[v[1]-1]) == "end"
				case "flags":
					for _, t := range toks[v[0]:v[1]] {
						r.noWrites = r.noWrites || t.kind == 's' && t.plain && src[t.start+1:t.end-1] == "no-writes"
					}
				}
			}
			i = close
		} else {
			args, close := list(j, ",")
			if close < 0 {
				return nil, fmt.Errorf("the registration at byte %d cannot be read (not closed, or an argument empty)", at)
			}
			if len(args) >= 1 {
				r.name, named = plainName(args[0])
			}
			if len(args) >= 2 {
				r.cb = span(args[1])
				r.inline = text(toks[args[1][0]]) == "function" && text(toks[args[1][1]-1]) == "end"
			}
			i = close
		}
		if !named {
			return nil, fmt.Errorf("the function registered at byte %d is not named by a plain string", at)
		}
		out = append(out, r)
	}
	return out, nil
}

// luaList splits the bracketed list opened at toks[open] at its
// separators outside brackets: each element's tokens [from, to), and the
// index of the closing bracket (-1: not closed, or an element empty,
// which Lua does not read either).
func luaList(toks []luaToken, open int, seps string) (elems [][2]int, close int) {
	depth, from := 0, open+1
	for j := open + 1; j < len(toks); j++ {
		switch k := toks[j].kind; {
		case depth == 0 && (k == ')' || k == '}' || k == ']'):
			if j > from {
				elems = append(elems, [2]int{from, j})
			}
			return elems, j
		case depth == 0 && strings.IndexByte(seps, k) >= 0:
			if j == from {
				return nil, -1
			}
			elems = append(elems, [2]int{from, j})
			from = j + 1
		case k == '(' || k == '[' || k == '{':
			depth++
		case k == ')' || k == ']' || k == '}':
			depth--
		}
	}
	return elems, -1
}

// within are the call sites of a library's function reg: those in its
// callback when the callback is written in place, else every site of the
// library (the callback is defined elsewhere, and may call any of it).
func within(calls []luaCall, reg luaReg) []luaCall {
	if !reg.inline {
		return calls
	}
	var out []luaCall
	for _, c := range calls {
		if reg.cb[0] <= c.nameStart && c.nameEnd <= reg.cb[1] {
			out = append(out, c)
		}
	}
	return out
}

// wrapLibrary is an EVAL script that runs the function reg of library
// src with the script's KEYS and ARGV. It shadows redis (and server, when
// the library names it) with a local table whose register_function
// records reg's callback (both call forms), every other field taken from
// the real one through a metatable; runs the library's text (its #! line
// left out) in a block of its own; and calls the callback:
//
//	local kavach_fn
//	local function kavach_register(name, callback)
//	  if type(name) == 'table' then name, callback = name.function_name, name.callback end
//	  if type(name) == 'string' and string.lower(name) == 'greet' then kavach_fn = callback end
//	end
//	local redis = setmetatable({register_function = kavach_register}, {__index = redis})
//	do
//	<the library>
//	end
//	return kavach_fn(KEYS, ARGV)
//
// Nothing global is written: the sandbox's globals stay as they are.
func wrapLibrary(src string, reg luaReg) string {
	body := src
	if strings.HasPrefix(body, "#!") {
		_, body, _ = strings.Cut(body, "\n")
	}
	var b strings.Builder
	b.WriteString("local kavach_fn\nlocal function kavach_register(name, callback)\n")
	b.WriteString("  if type(name) == 'table' then name, callback = name.function_name, name.callback end\n")
	b.WriteString("  if type(name) == 'string' and string.lower(name) == '" + strings.ReplaceAll(strings.ToLower(reg.name), "'", `\'`) + "' then kavach_fn = callback end\nend\n")
	b.WriteString("local redis = setmetatable({register_function = kavach_register}, {__index = redis})\n")
	if luaNames(body, "server") {
		b.WriteString("local server = setmetatable({register_function = kavach_register}, {__index = server})\n")
	}
	b.WriteString("do\n" + body + "\nend\nreturn kavach_fn(KEYS, ARGV)\n")
	return b.String()
}

// luaNames says whether Lua text names the global name (not as a field,
// x.name), as far as its tokens can be read.
func luaNames(src, name string) bool {
	toks, err := luaTokens(src)
	if err != nil {
		return strings.Contains(src, name)
	}
	for i, t := range toks {
		if t.kind == 'n' && src[t.start:t.end] == name && (i == 0 || toks[i-1].kind != '.' && toks[i-1].kind != ':') {
			return true
		}
	}
	return false
}

// After is the Variation for a request sent after earlier
// (kavach.Variation.After): the script of an EVALSHA or FCALL is looked
// for in those requests, and varied as an EVAL's is.
func (in Integration) After(earlier [][]byte) *kavach.Variation {
	if earlier == nil {
		earlier = [][]byte{}
	}
	return variation(in, earlier)
}

// afterCodec is an Integration told the requests sent before the one it varies.
type afterCodec struct {
	Integration
	earlier [][]byte
}

func (a afterCodec) Values(request []byte, schema kavach.Schema, at time.Time) []kavach.Substitution {
	return valuesAfter(request, a.earlier, schema, at)
}

func (a afterCodec) LeftWhole(request []byte) []string { return leftWhole(request, a.earlier) }

func (a afterCodec) Siblings(request []byte, schema kavach.Schema) ([]kavach.Substitution, []string) {
	if c, err := ParseCommand(request); err == nil {
		if f, ok := FamilyOf(c.Name); ok && f.Name == "script runners" {
			return nil, skippedRunners(c, a.earlier, schema)
		}
	}
	return a.Integration.Siblings(request, schema)
}

// LeftWhole says what script variants leave whole in a request, and
// why: a script Kavach cannot read (its call sites are not varied), a
// library whose functions it cannot tell apart (they are not run through
// other runners), or a runner whose script is not in the request
// (EVALSHA, FCALL: nothing of the script is varied; After looks for it in
// the steps before). Nil for any other request. It is pure.
func (Integration) LeftWhole(request []byte) []string { return leftWhole(request, nil) }

func leftWhole(request []byte, earlier [][]byte) []string {
	c, err := ParseCommand(request)
	if err != nil {
		return nil
	}
	s, why, ok := findScript(c, earlier)
	if !ok {
		if why == "" {
			return nil
		}
		return []string{fmt.Sprintf("the script of %s: %s (its call sites and runners are not varied)", c.Name, why)}
	}
	of := c.Name
	if s.from != "" {
		of += " (" + s.from + ")"
	}
	var notes []string
	if _, err := luaCalls(s.src); err != nil {
		notes = append(notes, fmt.Sprintf("the script of %s: %v (its call sites are not varied)", of, err))
	}
	if c.Name == "FUNCTION" {
		if _, err := luaRegistrations(s.src); err != nil {
			notes = append(notes, fmt.Sprintf("the library of %s: %v (its functions are not run through other runners)", of, err))
		}
	}
	return notes
}

// scriptVariants are the request's script varied (kavach.Substitution
// kinds "script-site" and "runner"): each call site's command within its
// family, and the script run through every other runner the build has
// (schema, as runners take it), the requests a runner needs (SCRIPT
// LOAD, FUNCTION LOAD) inserted before it. The script is the request's
// own, or, for an EVALSHA or FCALL, the one an earlier request sent
// (findScript): a changed copy of it is loaded again right before the
// request. A script that cannot be read gets runners only: its text is
// left whole.
func scriptVariants(c Command, earlier [][]byte, schema kavach.Schema) []kavach.Substitution {
	s, _, ok := findScript(c, earlier)
	if !ok {
		return nil
	}
	var out []kavach.Substitution
	calls, err := luaCalls(s.src)
	if err == nil {
		sites := calls
		if s.reg != nil {
			sites = within(calls, *s.reg)
		}
		for _, e := range siteEdits(s.src, sites) {
			setup, req := s.send(e.text)
			what := e.what
			if s.how != "" {
				what += ", " + s.how
			}
			out = append(out, kavach.Substitution{Setup: setup, Request: req, Kind: "script-site", Group: "the script", What: what})
		}
	}
	subs, _ := runnersOf(c, s, calls, err == nil, schema)
	return append(out, subs...)
}

// skippedRunners are the runners the request's script would be run
// through that the build lacks (runners); nil for a request whose script
// is not found.
func skippedRunners(c Command, earlier [][]byte, schema kavach.Schema) []string {
	s, _, ok := findScript(c, earlier)
	if !ok {
		return nil
	}
	calls, err := luaCalls(s.src)
	_, skipped := runnersOf(c, s, calls, err == nil, schema)
	return skipped
}

// runnersOf are the runners of a request's script (runners): an
// EVAL's or EVALSHA's script as it is; an FCALL's function, and each
// function a FUNCTION LOAD's library registers (run with no keys and no
// arguments), as the library wrapped into a script (wrapLibrary). An
// FCALL_RO's FCALL runner is the same function called by FCALL.
func runnersOf(c Command, s luaScript, calls []luaCall, parsed bool, schema kavach.Schema) (subs []kavach.Substitution, skipped []string) {
	switch c.Name {
	case "EVAL", "EVAL_RO", "EVALSHA", "EVALSHA_RO":
		return runners(c.Name, "the script", s.src, c.Args[2:], calls, parsed, false, schema)
	case "FCALL", "FCALL_RO":
		what := fmt.Sprintf("the function %s (its library wrapped into a script)", c.Args[1])
		subs, skipped = runners(c.Name, what, wrapLibrary(s.src, *s.reg), c.Args[2:], within(calls, *s.reg), parsed, s.reg.noWrites, schema)
		if c.Name == "FCALL_RO" {
			for i, r := range subs {
				if p, err := ParseCommand(r.Request); err == nil && p.Name == "FCALL" {
					subs[i].Setup = nil
					subs[i].Request = AppendCommand(nil, append([][]byte{[]byte("FCALL")}, c.Args[1:]...)...)
					subs[i].What = fmt.Sprintf("the function %s run through FCALL", c.Args[1])
				}
			}
		}
		return subs, skipped
	case "FUNCTION":
		regs, err := luaRegistrations(s.src)
		if err != nil {
			return nil, nil
		}
		for _, r := range regs[:min(len(regs), luaSites)] {
			what := fmt.Sprintf("the function %s (its library wrapped into a script, no keys, no arguments)", r.name)
			sub, skip := runners(c.Name, what, wrapLibrary(s.src, r), [][]byte{[]byte("0")}, within(calls, r), parsed, r.noWrites, schema)
			subs = append(subs, sub...)
			for _, k := range skip {
				if !slices.Contains(skipped, k) {
					skipped = append(skipped, k)
				}
			}
		}
		return subs, skipped
	}
	return nil, nil
}

// runners are a script (src, what for a person) run through every
// runner but the recorded one, with rest (numkeys, keys, arguments): EVAL,
// EVALSHA after SCRIPT LOAD, FCALL after FUNCTION LOAD of a library made
// of the script, and, for a script that only reads (every site a read
// luaFamilies know, or a no-writes flag, or recorded through a _RO
// runner, or ro), EVAL_RO, EVALSHA_RO and FCALL_RO of a function flagged
// no-writes. Runners the build lacks (schema, a *Learned, does not have
// them among its Commands) are not made: they are skipped, named in
// skipped. When what the build has is unknown (no *Learned, or no
// Commands learned), every runner is made.
func runners(recorded, what, src string, rest [][]byte, calls []luaCall, parsed, ro bool, schema kavach.Schema) (subs []kavach.Substitution, skipped []string) {
	body, flags := src, []string(nil)
	if strings.HasPrefix(src, "#!") {
		line, rest, _ := strings.Cut(src, "\n")
		body = rest
		for _, w := range strings.Fields(line)[1:] {
			if v, ok := strings.CutPrefix(w, "flags="); ok {
				flags = strings.Split(v, ",")
			}
		}
	}
	readOnly := ro || strings.HasSuffix(recorded, "_RO") || slices.Contains(flags, "no-writes")
	if parsed && !readOnly {
		readOnly = true
		for _, s := range calls {
			if w, ok := luaWrites(s.name); w || !ok {
				readOnly = false
			}
		}
	}
	sha := sha1Hex([]byte(src))
	// The function is named by the script's sha1, as Redis names an
	// EVAL's function f_<sha1>: an error naming it is masked alike
	// (kavach.MaskError).
	fname := "kavach_" + sha
	library := func(flags []string) string {
		var f string
		if len(flags) > 0 {
			f = ", flags={'" + strings.Join(flags, "', '") + "'}"
		}
		return "#!lua name=" + fname + "\nredis.register_function{function_name='" + fname +
			"', callback=function(KEYS, ARGV)\n" + body + "\nend" + f + "}\n"
	}
	run := func(name, first string) []byte {
		return AppendCommand(nil, append([][]byte{[]byte(name), []byte(first)}, rest...)...)
	}
	roFlags := flags
	if !slices.Contains(roFlags, "no-writes") {
		roFlags = append(slices.Clone(flags), "no-writes")
	}
	type runner struct {
		name, what string
		setup      [][]byte
		first      string
		ro         bool
	}
	scriptLoad := [][]byte{AppendCommand(nil, []byte("SCRIPT"), []byte("LOAD"), []byte(src))}
	all := []runner{
		{name: "EVAL", first: src},
		{name: "EVALSHA", first: sha, setup: scriptLoad, what: "after SCRIPT LOAD"},
		{name: "FCALL", first: fname, what: "of a library made of the script, after FUNCTION LOAD",
			setup: [][]byte{AppendCommand(nil, []byte("FUNCTION"), []byte("LOAD"), []byte("REPLACE"), []byte(library(flags)))}},
		{name: "EVAL_RO", first: src, ro: true},
		{name: "EVALSHA_RO", first: sha, setup: scriptLoad, what: "after SCRIPT LOAD", ro: true},
		{name: "FCALL_RO", first: fname, ro: true, what: "of a library made of the script, flagged no-writes, after FUNCTION LOAD",
			setup: [][]byte{AppendCommand(nil, []byte("FUNCTION"), []byte("LOAD"), []byte("REPLACE"), []byte(library(roFlags)))}},
	}
	has := func(string) bool { return true }
	if l, ok := schema.(*Learned); ok && l != nil && l.Commands != nil {
		has = func(name string) bool { return l.Commands[name] }
	}
	for _, r := range all {
		if r.name == recorded || r.ro && !readOnly {
			continue
		}
		if !has(r.name) {
			skipped = append(skipped, r.name)
			continue
		}
		w := what + " run through " + r.name
		if r.what != "" {
			w += " " + r.what
		}
		subs = append(subs, kavach.Substitution{Setup: r.setup, Request: run(r.name, r.first), Kind: "runner", Group: "the script", What: w})
	}
	return subs, skipped
}
