package redis

import (
	"strings"

	"github.com/kavach-dev/kavach"
)

// BlockingFields are the indexes, in fields (as Fields gives them), of a
// blocking command's count and timeout, -1 for none
// (kavach.Variation.BlockingFields): BLPOP, BRPOP, BZPOPMIN, BZPOPMAX, BLMOVE and
// BRPOPLPUSH end with their timeout; BLMPOP and BZMPOP begin with it and
// may end with COUNT n; XREAD and XREADGROUP take BLOCK ms and COUNT n
// before STREAMS; WAIT is numreplicas (its count) then its timeout. Any
// other command has neither.
func (Integration) BlockingFields(request []byte, fields []kavach.Field) (count, timeout int) {
	count, timeout = -1, -1
	c, err := ParseCommand(request)
	if err != nil || len(fields) == 0 {
		return count, timeout
	}
	last := len(fields) - 1
	switch c.Name {
	case "BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX", "BLMOVE", "BRPOPLPUSH":
		timeout = last
	case "BLMPOP", "BZMPOP":
		timeout = 0
		if last >= 1 && strings.EqualFold(fields[last-1].Value, "COUNT") {
			count = last
		}
	case "XREAD", "XREADGROUP":
		for i := 0; i < last; i++ {
			switch v := strings.ToUpper(fields[i].Value); v {
			case "STREAMS":
				return count, timeout
			case "COUNT":
				count = i + 1
			case "BLOCK":
				timeout = i + 1
			}
		}
	case "WAIT":
		if last == 1 {
			count, timeout = 0, 1
		}
	}
	return count, timeout
}

// aggregates are the commands that read what every write may feed: the
// number of keys, the server's statistics, the keyspace as a whole.
var aggregates = map[string]bool{"DBSIZE": true, "INFO": true, "KEYS": true, "SCAN": true, "RANDOMKEY": true, "MEMORY": true}

// ReadsAggregate reports whether request reads an aggregate
// (kavach.Variation.ReadsAggregate): DBSIZE, INFO, KEYS, SCAN, RANDOMKEY, MEMORY
// (STATS): whatever key an earlier write named, it may have fed it.
func (Integration) ReadsAggregate(request []byte) bool {
	c, err := ParseCommand(request)
	return err == nil && aggregates[c.Name]
}
