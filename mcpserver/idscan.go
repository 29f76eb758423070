package mcpserver

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// idScan finds the top-level "id" of a JSON object as its bytes stream
// by, without keeping them: a line too long to read, or one cut short,
// still gets its error answered with the id the client waits on. It
// understands only what finding that id needs (strings, nesting); what
// it cannot read (an id with escapes, or longer than a few hundred bytes)
// is no id.
type idScan struct {
	started, object  bool // the first byte that is not space was seen; it was '{'
	depth            int
	inString, escape bool
	expectKey        bool // the next string at depth 1 is a key
	inKey, keyLong   bool
	key              []byte
	awaitColon       bool
	keyIsID          bool
	inValue, valLong bool
	value            []byte
	id               []byte // the last id value read whole
}

const maxIDBytes = 256

// Reset forgets the line before.
func (s *idScan) Reset() {
	*s = idScan{key: s.key[:0], value: s.value[:0], id: s.id[:0]}
}

// Write takes the next bytes of the line.
func (s *idScan) Write(p []byte) {
	for _, b := range p {
		s.byte(b)
	}
}

func (s *idScan) byte(b byte) {
	if !s.started {
		switch b {
		case ' ', '\t', '\r', '\n':
			return
		}
		s.started, s.object = true, b == '{'
	}
	if !s.object {
		return
	}
	if s.inString {
		s.keep(b)
		switch {
		case s.escape:
			s.escape = false
			s.keyLong = s.keyLong || s.inKey // a key with escapes is not read
		case b == '\\':
			s.escape = true
		case b == '"':
			s.inString = false
			if s.inKey {
				s.inKey = false
				s.keyIsID = !s.keyLong && string(s.key) == "id"
				s.awaitColon = true
			}
		}
		return
	}
	switch b {
	case '"':
		s.inString = true
		if s.depth == 1 && s.expectKey {
			s.expectKey, s.inKey, s.keyLong = false, true, false
			s.key = s.key[:0]
			return
		}
		s.keep(b)
	case '{', '[':
		s.keep(b)
		s.depth++
		if s.depth == 1 {
			s.expectKey = true
		}
	case '}', ']':
		if s.depth == 1 {
			s.endValue()
		} else {
			s.keep(b)
		}
		s.depth--
	case ',':
		if s.depth == 1 {
			s.endValue()
			s.expectKey = true
		} else {
			s.keep(b)
		}
	case ':':
		if s.depth == 1 && s.awaitColon {
			s.awaitColon = false
			if s.keyIsID {
				s.inValue, s.valLong = true, false
				s.value = s.value[:0]
			}
			return
		}
		s.keep(b)
	default:
		s.keep(b)
	}
}

// keep adds b to the key or the id's value being read.
func (s *idScan) keep(b byte) {
	switch {
	case s.inKey && !(s.inString && b == '"' && !s.escape):
		if len(s.key) < 8 {
			s.key = append(s.key, b)
		} else {
			s.keyLong = true
		}
	case s.inValue:
		if len(s.value) < maxIDBytes {
			s.value = append(s.value, b)
		} else {
			s.valLong = true
		}
	}
}

func (s *idScan) endValue() {
	if s.inValue {
		s.inValue = false
		if !s.valLong {
			s.id = append(s.id[:0], bytes.TrimSpace(s.value)...)
		}
	}
}

// ID is the id read, as the SDK holds one (int64 or string), or nil.
func (s *idScan) ID() any {
	var v any
	if len(s.id) == 0 || json.Unmarshal(s.id, &v) != nil {
		return nil
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		return nil
	}
	return id.Raw()
}
