package redis

import (
	"strconv"
)

// Inspect is a command as invariants read it: {"command": "SET", "args":
// ["k", "v"]}, the command upper-cased, the arguments as strings.
func (Integration) Inspect(request []byte) map[string]any {
	c, err := ParseCommand(request)
	if err != nil || c.Name == "" {
		return map[string]any{"command": "", "args": []any{}}
	}
	args := make([]any, 0, len(c.Args)-1)
	for _, a := range c.Args[1:] {
		args = append(args, string(a))
	}
	return map[string]any{"command": c.Name, "args": args}
}

// valueAt is, for the commands that store a whole string value, the
// argument that holds it.
var valueAt = map[string]int{"SET": 2, "SETNX": 2, "GETSET": 2, "SETEX": 3, "PSETEX": 3}

// firstKeyWrites are the commands that change the value of their first
// argument (the common ones of every type; docs/invariants.md lists them).
// Commands that change only a key's expiry (EXPIRE, PERSIST, GETEX) are
// not writes here: the value last set is still the value; but EXPIRE and
// PEXPIRE with a time of 0 or less delete the key, and are.
var firstKeyWrites = map[string]bool{
	"SET": true, "SETNX": true, "GETSET": true, "SETEX": true, "PSETEX": true, "APPEND": true, "SETRANGE": true,
	"INCR": true, "INCRBY": true, "INCRBYFLOAT": true, "DECR": true, "DECRBY": true, "GETDEL": true,
	"LPUSH": true, "RPUSH": true, "LPUSHX": true, "RPUSHX": true, "LPOP": true, "RPOP": true, "LSET": true, "LREM": true,
	"LTRIM": true, "LINSERT": true, "HSET": true, "HSETNX": true, "HMSET": true, "HDEL": true, "HINCRBY": true,
	"HINCRBYFLOAT": true, "SADD": true, "SREM": true, "SPOP": true, "SMOVE": true, "ZADD": true, "ZREM": true,
	"ZINCRBY": true, "ZPOPMIN": true, "ZPOPMAX": true, "XADD": true, "XDEL": true, "XTRIM": true,
	"PFADD": true, "SETBIT": true, "BITFIELD": true, "RESTORE": true,
}

// Writes says which keys a command writes: the first argument of the
// write commands above; every argument of DEL and UNLINK; the keys of
// MSET and MSETNX; both keys of RENAME. The value is what SET, SETNX,
// GETSET, SETEX and PSETEX store; nil for every other write.
func (Integration) Writes(request []byte) ([]string, *string) {
	c, err := ParseCommand(request)
	if err != nil || len(c.Args) < 2 {
		return nil, nil
	}
	args := c.Args[1:]
	switch c.Name {
	case "DEL", "UNLINK":
		keys := make([]string, len(args))
		for i, a := range args {
			keys[i] = string(a)
		}
		return keys, nil
	case "MSET", "MSETNX":
		var keys []string
		for i := 0; i+1 < len(args); i += 2 {
			keys = append(keys, string(args[i]))
		}
		if len(keys) == 1 {
			v := string(args[1])
			return keys, &v
		}
		return keys, nil
	case "EXPIRE", "PEXPIRE":
		// An expiry in the past deletes the key at once: a write, no value.
		// A future one leaves the value as it is.
		if n, err := strconv.ParseInt(string(args[min(1, len(args)-1)]), 10, 64); err == nil && n <= 0 && len(args) > 1 {
			return []string{string(args[0])}, nil
		}
		return nil, nil
	case "RENAME", "RENAMENX":
		if len(args) == 2 {
			return []string{string(args[0]), string(args[1])}, nil
		}
	}
	if !firstKeyWrites[c.Name] {
		return nil, nil
	}
	keys := []string{string(args[0])}
	if i, ok := valueAt[c.Name]; ok && i < len(c.Args) {
		v := string(c.Args[i])
		return keys, &v
	}
	return keys, nil
}
