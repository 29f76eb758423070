package redis

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/kavach-dev/kavach"
)

// NewIdentities starts one replay's map of connection ids
// (kavach.Abilities.NewIdentities): Redis numbers its connections from
// one in the order they come, readiness probes and Kavach's own
// connections included, so a replayed connection's id is seldom the
// recorded one. Learnt from the replies that show an id (CLIENT ID,
// HELLO, CLIENT INFO), mapped in the requests that name one (CLIENT
// UNBLOCK, CLIENT KILL ID and the filter form's ID, CLIENT TRACKING ...
// REDIRECT, CLIENT LIST ID).
func (Integration) NewIdentities() kavach.Identities {
	return &connIDs{ids: map[int64]int64{}}
}

type connIDs struct {
	ids map[int64]int64 // recorded -> replayed
}

func (m *connIDs) Shows(request []byte) bool {
	cmd, err := ParseCommand(request)
	if err != nil {
		return false
	}
	switch cmd.Name {
	case "HELLO":
		return true
	case "CLIENT":
		if len(cmd.Args) == 2 {
			sub := strings.ToUpper(string(cmd.Args[1]))
			return sub == "ID" || sub == "INFO"
		}
	}
	return false
}

func (m *connIDs) Learn(request, recorded, replayed []byte) {
	rec, ok1 := shownID(recorded)
	rep, ok2 := shownID(replayed)
	if ok1 && ok2 {
		m.ids[rec] = rep
	}
}

// shownID is the connection id a reply shows: CLIENT ID's integer,
// HELLO's "id" field, CLIENT INFO's "id=N".
func shownID(reply []byte) (int64, bool) {
	v, err := Parse(reply)
	if err != nil {
		return 0, false
	}
	switch v.Kind {
	case KindInt:
		return v.Int, true
	case KindMap, KindArray:
		for i := 0; i+1 < len(v.Elems); i += 2 {
			if k := v.Elems[i]; string(k.Str) == "id" && v.Elems[i+1].Kind == KindInt {
				return v.Elems[i+1].Int, true
			}
		}
	case KindBulk, KindVerbatim:
		for _, f := range strings.Fields(string(v.Str)) {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				n, err := strconv.ParseInt(id, 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

func (m *connIDs) Map(request []byte) []byte {
	if len(m.ids) == 0 {
		return request
	}
	cmd, err := ParseCommand(request)
	if err != nil || cmd.Name != "CLIENT" || len(cmd.Args) < 3 {
		return request
	}
	args := cmd.Args
	changed := false
	at := func(i int) {
		if i >= len(args) {
			return
		}
		n, err := strconv.ParseInt(string(args[i]), 10, 64)
		if err != nil {
			return
		}
		if to, ok := m.ids[n]; ok && to != n {
			if !changed {
				args = append([][]byte(nil), args...)
				changed = true
			}
			args[i] = strconv.AppendInt(nil, to, 10)
		}
	}
	switch sub := strings.ToUpper(string(args[1])); sub {
	case "UNBLOCK":
		at(2)
	case "KILL":
		// CLIENT KILL addr:port (the old form) names no id; the filter
		// form does: CLIENT KILL ID id [filter value ...].
		for i := 2; i+1 < len(args); i += 2 {
			if bytes.EqualFold(args[i], []byte("ID")) {
				at(i + 1)
			}
		}
	case "TRACKING":
		for i := 3; i+1 < len(args); i++ {
			if bytes.EqualFold(args[i], []byte("REDIRECT")) {
				at(i + 1)
			}
		}
	case "LIST":
		for i := 2; i < len(args); i++ {
			if bytes.EqualFold(args[i], []byte("ID")) {
				for j := i + 1; j < len(args); j++ {
					at(j)
				}
				break
			}
		}
	}
	if !changed {
		return request
	}
	return AppendCommand(nil, args...)
}
