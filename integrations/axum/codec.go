package axum

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	textcut "github.com/kavach-dev/kavach/internal/cut"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/launch"
)

// Protocol is the protocol name in fixtures.
const Protocol = "http"

// Integration is HTTP/1.1 for Kavach. Its messages are framed, compared
// and varied without state, safe for concurrent use. Its builds get their
// port through "{port}" in their arguments and the PORT environment
// variable; a build is ready when it accepts a TCP connection, and is
// stopped with SIGTERM, then SIGKILL of its group. Its probes send the
// service no request: a connection opened and closed at once reaches no
// handler, no middleware, no request counter (docs/record.md, "Kavach's
// probes").
type Integration struct {
	// StartTimeout bounds start-up; zero means 10 s.
	StartTimeout time.Duration
	// Volatile are more response headers (lower case) that change on
	// every response and are not compared, beside VolatileHeaders.
	Volatile []string
	// SecretParams are more names whose values are secrets, beside
	// DefaultSecretParams and the secret headers (compared without case):
	// as headers, query parameters and JSON members.
	SecretParams []string
}

// VolatileHeaders change on every response and are never compared.
var VolatileHeaders = []string{"date"}

// Protocol returns "http".
func (Integration) Protocol() string { return Protocol }

// SplitRequest frames one request.
func (Integration) SplitRequest(data []byte) (int, error) { return SplitRequest(data) }

// SplitResponse frames one response.
func (Integration) SplitResponse(data []byte) (int, error) { return SplitResponse(data) }

// Replies is one: HTTP/1.1 answers each request once (interim 1xx
// responses are pushes).
func (Integration) Replies([]byte) int { return 1 }

// IsPush reports an interim (1xx) response.
func (Integration) IsPush(response []byte) bool {
	return len(response) > 12 && string(response[:7]) == "HTTP/1." && response[9] == '1'
}

// DescribeRequest renders `POST /api/v1/items {"name":"pen"}`.
func (Integration) DescribeRequest(msg []byte, max int) string {
	m, err := Parse(msg, true)
	if err != nil {
		return cut(fmt.Sprintf("(unparsable) %q", msg), max)
	}
	s := m.Method + " " + m.Target
	if len(m.Body) > 0 {
		s += " " + oneLine(m.Body)
	}
	return cut(s, max)
}

// DescribeResponse renders `201 Created {"id":1}`.
func (Integration) DescribeResponse(msg []byte, max int) string {
	m, err := Parse(msg, false)
	if err != nil {
		return cut(fmt.Sprintf("(unparsable) %q", msg), max)
	}
	s := strconv.Itoa(m.Status)
	if m.Reason != "" {
		s += " " + m.Reason
	}
	if len(m.Body) > 0 {
		s += " " + oneLine(m.Body)
	}
	return cut(s, max)
}

func oneLine(b []byte) string {
	if gjson.ValidBytes(b) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, b); err == nil {
			return buf.String()
		}
	}
	return strings.ReplaceAll(strings.ReplaceAll(string(b), "\r", `\r`), "\n", `\n`)
}

// cut shortens a description to max bytes (cut.String); a max of 0 or
// less keeps it whole.
func cut(s string, max int) string {
	if max <= 0 {
		return s
	}
	return textcut.String(s, max)
}

// Classify: a 5xx status is an error of class "5xx"; everything else,
// 4xx included (an answer the service chose), is ok. (A connection closed
// without a response is a crash, and no response in time a hang: the
// replay decides those.)
func (c Integration) Classify(_ []byte, responses [][]byte) kavach.Outcome {
	for _, r := range responses {
		if c.IsPush(r) {
			continue
		}
		m, err := Parse(r, false)
		if err != nil {
			return kavach.Outcome{Kind: kavach.Error, Class: "PROTOCOL", Detail: err.Error()}
		}
		if m.Status >= 500 {
			return kavach.Outcome{Kind: kavach.Error, Class: "5xx", Detail: cut(fmt.Sprintf("%d %s %s", m.Status, m.Reason, oneLine(m.Body)), 200)}
		}
		return kavach.Outcome{Kind: kavach.OK}
	}
	return kavach.Outcome{Kind: kavach.OK}
}

// Normalize is what replays compare of a response: {"status": int,
// "headers": {lower-case name: value}, "body": the JSON body as a tree,
// or the body as a string}. Volatile headers (Date, and Integration.Volatile)
// are left out; so are Content-Length (the body is compared) and
// Transfer-Encoding (how it was framed, not what it says).
func (c Integration) Normalize(_, response []byte) any {
	m, err := Parse(response, false)
	if err != nil {
		return map[string]any{"unparsable": string(response)}
	}
	skip := map[string]bool{"content-length": true, "transfer-encoding": true}
	for _, h := range append(VolatileHeaders, c.Volatile...) {
		skip[strings.ToLower(h)] = true
	}
	headers := map[string]any{}
	for _, h := range m.Headers {
		if name := strings.ToLower(h[0]); !skip[name] {
			headers[name] = h[1]
		}
	}
	return map[string]any{"status": int64(m.Status), "headers": headers, "body": bodyTree(m.Body)}
}

// bodyTree is a JSON body as a tree (numbers as int64 when whole), or the
// body as a string.
func bodyTree(b []byte) any {
	if len(b) == 0 {
		return ""
	}
	if !gjson.ValidBytes(b) {
		return string(b)
	}
	return tree(gjson.ParseBytes(b))
}

func tree(r gjson.Result) any {
	switch r.Type {
	case gjson.Null:
		return nil
	case gjson.False:
		return false
	case gjson.True:
		return true
	case gjson.Number:
		if i, err := strconv.ParseInt(r.Raw, 10, 64); err == nil {
			return i
		}
		return r.Float()
	case gjson.String:
		return r.String()
	}
	if r.IsArray() {
		out := []any{}
		r.ForEach(func(_, v gjson.Result) bool { out = append(out, tree(v)); return true })
		return out
	}
	out := map[string]any{}
	r.ForEach(func(k, v gjson.Result) bool { out[k.String()] = tree(v); return true })
	return out
}

// Redacted replaces secrets.
const Redacted = "<redacted>"

// secretHeaders are redacted on record, in requests and (echoed) in
// responses.
var secretHeaders = map[string]bool{
	"authorization": true, "proxy-authorization": true, "cookie": true, "x-api-key": true,
	"x-auth-token": true, "x-access-token": true, "x-session-token": true, "x-csrf-token": true,
}

// Redact replaces the values of the secret headers (Authorization,
// Proxy-Authorization, Cookie, X-Api-Key, X-Auth-Token... and the names
// added as SecretParams), of the secret query parameters
// (DefaultSecretParams and SecretParams) in the request line and headers,
// and of secret members of a JSON or form body.
func (c Integration) Redact(request []byte) ([]byte, string) {
	m, err := Parse(request, true)
	if err != nil {
		return request, ""
	}
	headers := c.headerNames(false)
	var what []string
	for i, h := range m.Headers {
		if headers[strings.ToLower(h[0])] && h[1] != Redacted {
			m.Headers[i][1] = Redacted
			what = append(what, h[0]+" header")
		}
	}
	out := request
	if what != nil {
		out = encodeKeepingFraming(m)
	}
	if red, ok := redactHeadParams(out, c.secretParams()); ok {
		out = red
		what = append(what, "secret query parameters")
	}
	if red, ok := redactBody(out, true, c.bodyNames()); ok {
		out = red
		what = append(what, "secret body fields")
	}
	if what == nil {
		return request, ""
	}
	return out, strings.Join(what, ", ")
}

// encodeKeepingFraming re-encodes a request, keeping a chunked body chunked.
func encodeKeepingFraming(m *Message) []byte {
	if strings.EqualFold(m.Header("Transfer-Encoding"), "chunked") {
		raw := Encode(&Message{Method: m.Method, Path: m.Path, Query: m.Query, Proto: m.Proto, Headers: m.Headers})
		raw = raw[:len(raw)-2] // drop the blank line, add the chunked body back
		out := append(raw, "Transfer-Encoding: chunked\r\n\r\n"...)
		if len(m.Body) > 0 {
			out = append(out, fmt.Sprintf("%x\r\n", len(m.Body))...)
			out = append(out, m.Body...)
			out = append(out, "\r\n"...)
		}
		return append(out, "0\r\n\r\n"...)
	}
	return Encode(m)
}

// FieldName names a field as HTTP does: "header X-Note", "query page",
// "path segment 2", "body title" (kavach.Variation.FieldName, KeyWords).
func (Integration) FieldName(_ int, f kavach.Field) string { return f.Name }

// KeyWords say what a path segment typed as a key (a name in the path)
// is when varied (kavach.Variation.FieldName, KeyWords): one no request of the recording
// names, or another the recording's paths show.
func (Integration) KeyWords() (missing, other string) {
	return "a path segment no recorded request names", "another path segment the recording shows"
}

// Fields are a request's mutable parts: the path segments that are
// numbers (ids), then the other path segments (names, typed as keys), the query parameters, the headers (but Host and those
// that frame the message), and the leaves of a JSON body (by gjson path). The kind is the method and the path with numbers
// replaced by {n}: requests of one kind can swap fields.
func (Integration) Fields(request []byte, _ kavach.Schema) (string, []kavach.Field, bool) {
	m, err := Parse(request, true)
	if err != nil {
		return "", nil, false
	}
	var fields []kavach.Field
	segs := strings.Split(m.Path, "/")
	var names []kavach.Field
	for i, s := range segs {
		if _, err := strconv.ParseInt(s, 10, 64); err == nil && s != "" {
			fields = append(fields, kavach.Field{Name: fmt.Sprintf("path segment %d", i), Key: fmt.Sprintf("path.%d", i), Value: s, Type: kavach.FieldNumber})
			segs[i] = "{n}"
		} else if s != "" {
			// A name in the path (a resource, a route): varied like a
			// key, to the other names the recording shows and to one no
			// route has. After the numbers, which are the fields so far.
			names = append(names, kavach.Field{Name: fmt.Sprintf("path segment %d", i), Key: fmt.Sprintf("path.%d", i), Value: s, Type: kavach.FieldKey})
		}
	}
	fields = append(fields, names...)
	kind := m.Method + " " + strings.Join(segs, "/")
	if q, err := url.ParseQuery(m.Query); err == nil {
		names := make([]string, 0, len(q))
		for k := range q {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			v := q.Get(k)
			fields = append(fields, kavach.Field{Name: "query " + k, Key: "query." + k, Value: v, Type: guess(v)})
		}
	}
	for _, h := range m.Headers {
		if name := strings.ToLower(h[0]); !framingHeaders[name] {
			fields = append(fields, kavach.Field{Name: "header " + h[0], Key: "header." + h[0], Value: h[1], Type: kavach.FieldString})
		}
	}
	if len(m.Body) > 0 && gjson.ValidBytes(m.Body) {
		leaves(gjson.ParseBytes(m.Body), "", &fields)
	}
	return kind, fields, true
}

// framingHeaders say how a message is delimited or routed, not what it
// asks: variants leave them alone.
var framingHeaders = map[string]bool{"host": true, "content-length": true, "transfer-encoding": true, "connection": true}

func guess(v string) kavach.FieldType {
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return kavach.FieldNumber
	}
	return kavach.FieldString
}

// leaves appends the JSON body's leaves as fields keyed "body.PATH".
func leaves(r gjson.Result, prefix string, out *[]kavach.Field) {
	r.ForEach(func(k, v gjson.Result) bool {
		path := k.String()
		if prefix != "" {
			path = prefix + "." + path
		}
		switch v.Type {
		case gjson.Number:
			*out = append(*out, kavach.Field{Name: "body " + path, Key: "body." + path, Value: v.Raw, Type: kavach.FieldNumber})
		case gjson.String:
			*out = append(*out, kavach.Field{Name: "body " + path, Key: "body." + path, Value: v.String(), Type: kavach.FieldString})
		case gjson.True, gjson.False:
			alt := "true"
			if v.Type == gjson.True {
				alt = "false"
			}
			*out = append(*out, kavach.Field{Name: "body " + path, Key: "body." + path, Value: v.Raw, Type: kavach.FieldToken, Alternatives: []string{alt, "null"}})
		case gjson.JSON:
			leaves(v, path, out)
		}
		return true
	})
}

// Rebuild sets each field given (by Key) in the request and removes the
// fields of the request that are not given, then encodes it with its
// Content-Length set.
func (c Integration) Rebuild(request []byte, fields []kavach.Field) []byte {
	m, err := Parse(request, true)
	if err != nil {
		return request
	}
	_, orig, _ := c.Fields(request, nil)
	given := map[string]kavach.Field{}
	for _, f := range fields {
		given[f.Key] = f
	}
	segs := strings.Split(m.Path, "/")
	q, _ := url.ParseQuery(m.Query)
	body := m.Body
	for _, o := range orig {
		f, keep := given[o.Key]
		area, key, _ := strings.Cut(o.Key, ".")
		switch area {
		case "path":
			i, _ := strconv.Atoi(key)
			if keep {
				segs[i] = url.PathEscape(f.Value)
			} else {
				segs[i] = ""
			}
		case "query":
			if keep {
				q.Set(key, f.Value)
			} else {
				q.Del(key)
			}
		case "header":
			for i, h := range m.Headers {
				if h[0] == key {
					if keep {
						m.Headers[i][1] = f.Value
					} else {
						m.Headers = append(m.Headers[:i], m.Headers[i+1:]...)
					}
					break
				}
			}
		case "body":
			if !keep {
				body, _ = sjson.DeleteBytes(body, key)
				continue
			}
			switch f.Type {
			case kavach.FieldNumber, kavach.FieldToken:
				if _, err := strconv.ParseFloat(f.Value, 64); err == nil || f.Value == "true" || f.Value == "false" || f.Value == "null" {
					body, _ = sjson.SetRawBytes(body, key, []byte(f.Value))
				} else {
					body, _ = sjson.SetBytes(body, key, f.Value)
				}
			default:
				body, _ = sjson.SetBytes(body, key, f.Value)
			}
		}
	}
	m.Path = strings.Join(segs, "/")
	m.Query = q.Encode()
	m.Body = body
	return Encode(m)
}

// Inspect is a request as invariants read it: {"method", "path",
// "query": {name: value}, "headers": {lower-case name: value}, "body": a
// JSON tree or a string}.
func (Integration) Inspect(request []byte) map[string]any {
	m, err := Parse(request, true)
	if err != nil {
		return map[string]any{"method": "", "path": "", "query": map[string]any{}, "headers": map[string]any{}, "body": ""}
	}
	query := map[string]any{}
	if q, err := url.ParseQuery(m.Query); err == nil {
		for k := range q {
			query[k] = q.Get(k)
		}
	}
	headers := map[string]any{}
	for _, h := range m.Headers {
		headers[strings.ToLower(h[0])] = h[1]
	}
	return map[string]any{"method": m.Method, "path": m.Path, "query": query, "headers": headers, "body": bodyTree(m.Body)}
}

// Writes: POST, PUT, PATCH and DELETE write their path; PUT stores its body.
func (Integration) Writes(request []byte) ([]string, *string) {
	m, err := Parse(request, true)
	if err != nil {
		return nil, nil
	}
	switch m.Method {
	case "PUT":
		v := string(m.Body)
		return []string{m.Path}, &v
	case "POST", "PATCH", "DELETE":
		return []string{m.Path}, nil
	}
	return nil, nil
}

// Start starts a build and waits until it accepts a connection; the
// build is stopped once ctx is done.
func (in Integration) Start(ctx context.Context, build kavach.Launch) (kavach.Process, error) {
	p, err := launch.Spawn{Launch: build, Env: []string{"PORT={port}"}, StartTimeout: in.StartTimeout, Ready: ready}.Start(ctx)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// ready is a TCP connection accepted, closed without a byte sent: an HTTP
// server answers nothing and counts no request for it.
func ready(ctx context.Context, addr string) error {
	conn, err := launch.Dial(ctx, addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// Version is "": asking an HTTP service what it is would be a request it
// can count. A build's identity is its file's SHA-256, in the fixture and
// the report.
func (Integration) Version(context.Context, string) string { return "" }

// Keys is each request's resource: its path, without the query. It asks
// no build. GET and HEAD read their path; every other method writes it. A
// path relates to the paths below it (POST /items to GET /items/2); an
// unparsable request is unknown (nil): it may touch and write anything.
// No request is said to replace its path (replaces nil): a path relates to
// the paths below it, which a PUT of the path does not replace.
func (Integration) Keys(_ context.Context, _ string, requests [][]byte) (keys, writes, replaces [][]string) {
	keys, writes = make([][]string, len(requests)), make([][]string, len(requests))
	for i, r := range requests {
		if m, err := Parse(r, true); err == nil {
			keys[i] = []string{m.Path}
			writes[i] = keys[i]
			if m.Method == "GET" || m.Method == "HEAD" {
				writes[i] = []string{}
			}
		}
	}
	return keys, writes, nil
}
