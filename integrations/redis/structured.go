package redis

import (
	"math/big"
	"strings"
)

// The values inside Redis arguments that have parts: numbers, stream ids,
// sorted-set score and lexicographic range bounds. Each parser keeps the
// text of every part, so that String writes the value back exactly as
// sent (FuzzStructured checks it); variants change one part and write the
// value again.

// Number is a decimal number as written: an optional sign, integer
// digits, an optional fraction (after a point) and an optional exponent.
// Inf and NaN are not Numbers (they are words).
type Number struct {
	Sign  string // "", "-" or "+"
	Int   string // digits before the point; may be empty ("-.5")
	Point bool   // a decimal point is written
	Frac  string // digits after the point
	Exp   string // the exponent as written, "e" or "E" included ("e+10"); "" for none
}

// ParseNumber reads s as a decimal number: [+-]digits[.digits][e[+-]digits],
// with at least one digit in the mantissa.
func ParseNumber(s string) (Number, bool) {
	var n Number
	if s != "" && (s[0] == '-' || s[0] == '+') {
		n.Sign, s = s[:1], s[1:]
	}
	i := digitRun(s)
	n.Int, s = s[:i], s[i:]
	if s != "" && s[0] == '.' {
		n.Point, s = true, s[1:]
		i = digitRun(s)
		n.Frac, s = s[:i], s[i:]
	}
	if n.Int == "" && n.Frac == "" {
		return Number{}, false
	}
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		j := 1
		if j < len(s) && (s[j] == '-' || s[j] == '+') {
			j++
		}
		d := digitRun(s[j:])
		if d == 0 {
			return Number{}, false
		}
		n.Exp, s = s[:j+d], s[j+d:]
	}
	if s != "" {
		return Number{}, false
	}
	return n, true
}

// digitRun is the length of the run of ASCII digits s starts with.
func digitRun(s string) int {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

func (n Number) String() string {
	s := n.Sign + n.Int
	if n.Point {
		s += "." + n.Frac
	}
	return s + n.Exp
}

// Integer says whether the number is written as an integer: no point, no
// exponent.
func (n Number) Integer() bool { return !n.Point && n.Exp == "" }

// StreamID is a stream entry id as an argument writes it: ms-seq, an
// incomplete id (ms alone, ms-*), a special id (*, -, +, $, >), each
// possibly preceded by "(" (an exclusive range bound).
type StreamID struct {
	Exclusive bool   // written with a leading "("
	Special   string // "*", "-", "+", "$" or ">"; then the rest is empty
	MS        string // the milliseconds part's digits
	Dash      bool   // a "-" follows MS
	Seq       string // the sequence part's digits, or "*" (auto)
}

// ParseStreamID reads s as a stream id. Parts are digits as written:
// their range is the server's to check (a part past 2^64-1 is a value a
// variant sends on purpose).
func ParseStreamID(s string) (StreamID, bool) {
	var id StreamID
	if strings.HasPrefix(s, "(") {
		id.Exclusive, s = true, s[1:]
	}
	switch s {
	case "*", "-", "+", "$", ">":
		id.Special = s
		return id, true
	}
	i := digitRun(s)
	if i == 0 {
		return StreamID{}, false
	}
	id.MS, s = s[:i], s[i:]
	if s == "" {
		return id, true
	}
	if s[0] != '-' {
		return StreamID{}, false
	}
	id.Dash, s = true, s[1:]
	if s == "*" || (s != "" && digitRun(s) == len(s)) {
		id.Seq = s
		return id, true
	}
	return StreamID{}, false
}

func (id StreamID) String() string {
	s := ""
	if id.Exclusive {
		s = "("
	}
	if id.Special != "" {
		return s + id.Special
	}
	s += id.MS
	if id.Dash {
		s += "-" + id.Seq
	}
	return s
}

// ScoreBound is a bound of a sorted-set score range: a number (or inf,
// -inf, +inf), inclusive unless written with a leading "(".
type ScoreBound struct {
	Exclusive bool
	Value     string // the number or infinity as written
}

// ParseScoreBound reads s as a score range bound: "(" optional, then a
// decimal number or an infinity.
func ParseScoreBound(s string) (ScoreBound, bool) {
	var b ScoreBound
	if strings.HasPrefix(s, "(") {
		b.Exclusive, s = true, s[1:]
	}
	if _, ok := ParseNumber(s); !ok && !isInf(s) {
		return ScoreBound{}, false
	}
	b.Value = s
	return b, true
}

func isInf(s string) bool {
	switch strings.ToLower(s) {
	case "inf", "+inf", "-inf":
		return true
	}
	return false
}

func (b ScoreBound) String() string {
	if b.Exclusive {
		return "(" + b.Value
	}
	return b.Value
}

// LexBound is a bound of a lexicographic range: "-" (before every
// member), "+" (after every member), or a member after "[" (inclusive) or
// "(" (exclusive).
type LexBound struct {
	Open   byte // '[', '(', '-' or '+'
	Member string
}

// ParseLexBound reads s as a lexicographic range bound.
func ParseLexBound(s string) (LexBound, bool) {
	switch {
	case s == "-" || s == "+":
		return LexBound{Open: s[0]}, true
	case s != "" && (s[0] == '[' || s[0] == '('):
		return LexBound{Open: s[0], Member: s[1:]}, true
	}
	return LexBound{}, false
}

func (b LexBound) String() string {
	if b.Open == 0 {
		return ""
	}
	return string(b.Open) + b.Member
}

// addDigits is the decimal digits d plus delta, or "" when the result
// would be negative.
func addDigits(d string, delta int64) string {
	n, ok := new(big.Int).SetString(d, 10)
	if !ok {
		return ""
	}
	n.Add(n, big.NewInt(delta))
	if n.Sign() < 0 {
		return ""
	}
	return n.String()
}
