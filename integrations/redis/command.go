package redis

import "fmt"

// Command is a client request.
type Command struct {
	Name   string   // the first argument, upper-cased (ASCII); "" for an empty command
	Args   [][]byte // all the arguments, the name first, as sent
	Inline bool     // sent as an inline command rather than an array
	Raw    []byte   // the frame
}

// ParseCommand parses a request frame, exactly one whole frame as Split
// finds it: an array of bulk strings, or an inline command. An empty array
// or an empty inline line is a Command with no arguments, which
// redis-server ignores. Args alias frame, except inline arguments that
// quotes or escapes changed.
func ParseCommand(frame []byte) (Command, error) {
	c := Command{Raw: frame}
	if err := c.parse(frame); err != nil {
		return Command{}, fmt.Errorf("redis command: %w", err)
	}
	if len(c.Args) > 0 {
		name := append([]byte(nil), c.Args[0]...)
		for i, b := range name {
			if 'a' <= b && b <= 'z' {
				name[i] = b - 'a' + 'A'
			}
		}
		c.Name = string(name)
	}
	return c, nil
}

func (c *Command) parse(frame []byte) error {
	s := scanner{data: frame}
	var end int
	var err error
	switch {
	case len(frame) == 0:
		err = errIncomplete
	case Kind(frame[0]) == KindArray:
		end, err = s.commandArray(&c.Args)
	case isType(frame[0]):
		return s.fail(0, fmt.Sprintf("a %s is not a command", Kind(frame[0])))
	default:
		c.Inline = true
		end, err = s.inline(func(_, arg []byte) { c.Args = append(c.Args, arg) })
	}
	if err != nil {
		return s.wrapIncomplete(err)
	}
	if end != len(frame) {
		return s.fail(end, "trailing bytes after frame")
	}
	return nil
}

// commandArray scans an array of bulk strings at the start of data into
// args, and returns its length.
func (s *scanner) commandArray(args *[][]byte) (int, error) {
	n, q, err := s.header(0)
	switch {
	case err != nil:
		return 0, err
	case n < 0:
		return 0, s.fail(1, "a null array is not a command")
	}
	*args = make([][]byte, 0, min(n, (len(s.data)-q)/6)) // "$0\r\n\r\n" is the shortest argument
	for range n {
		if q >= len(s.data) {
			return 0, errIncomplete
		}
		if Kind(s.data[q]) != KindBulk {
			return 0, s.fail(q, fmt.Sprintf("command argument is a %s, not a bulk string", Kind(s.data[q])))
		}
		m, r, err := s.header(q)
		if err == nil && m < 0 {
			err = s.fail(q+1, "command argument is a null bulk string")
		}
		if err != nil {
			return 0, err
		}
		if q, err = s.payload(r, m); err != nil {
			return 0, err
		}
		*args = append(*args, s.data[r:r+m])
	}
	return q, nil
}
