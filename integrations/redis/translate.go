package redis

import (
	"strconv"
	"strings"
)

// Translate is request, a write of key from, made to write the same
// elements into key to as a value of type typ (kavach.Variation.Translate):
// a sibling of the failing request on a key of its own type is given the
// content the recorded key's writers gave it, and is woken by the pushes
// that woke the recorded request (docs/variants.md, "Siblings with their
// scenario"). The elements are a list push's values, a set's members, a
// sorted set's members (with their scores); they are written as a list
// (RPUSH, LPUSH for LPUSH), a set (SADD) or a sorted set (ZADD, scores
// kept, else each element's place). Anything else (a string, a hash, a
// stream; a write of another key; options it does not know) is not
// translated: ok false.
func (Integration) Translate(request []byte, from, to, typ string) ([]byte, bool) {
	c, err := ParseCommand(request)
	if err != nil || len(c.Args) < 3 || string(c.Args[1]) != from {
		return nil, false
	}
	els, scores, left, ok := elementsOf(c.Name, c.Args[2:])
	if !ok || len(els) == 0 {
		return nil, false
	}
	out := [][]byte{nil, []byte(to)}
	switch typ {
	case "list":
		out[0] = []byte("RPUSH")
		if left {
			out[0] = []byte("LPUSH")
		}
		out = append(out, els...)
	case "set":
		out[0] = []byte("SADD")
		out = append(out, els...)
	case "zset":
		out[0] = []byte("ZADD")
		for i, e := range els {
			score := []byte(strconv.Itoa(i))
			if scores != nil {
				score = scores[i]
			}
			out = append(out, score, e)
		}
	default:
		return nil, false
	}
	return AppendCommand(nil, out...), true
}

// elementsOf are the elements a write of a list, set or sorted set adds
// (args after the key), the sorted set's scores (nil for the others),
// and whether they go in at the left (LPUSH); ok false for any other
// write, or options it does not know.
func elementsOf(name string, args [][]byte) (els, scores [][]byte, left, ok bool) {
	switch name {
	case "RPUSH", "RPUSHX", "SADD":
		return args, nil, false, true
	case "LPUSH", "LPUSHX":
		return args, nil, true, true
	case "ZADD":
		i := 0
	options:
		for ; i < len(args); i++ {
			switch strings.ToUpper(string(args[i])) {
			case "NX", "XX", "GT", "LT", "CH":
			case "INCR":
				return nil, nil, false, false
			default:
				break options
			}
		}
		rest := args[i:]
		if len(rest) == 0 || len(rest)%2 != 0 {
			return nil, nil, false, false
		}
		for j := 0; j < len(rest); j += 2 {
			scores = append(scores, rest[j])
			els = append(els, rest[j+1])
		}
		return els, scores, false, true
	}
	return nil, nil, false, false
}
