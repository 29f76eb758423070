package incidents

import (
	"context"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Shop is a realistic session (#41 "Done when"; docs/variants.md, "A
// realistic recording"), as users record them rather than as one shape
// staged alone: three go-redis connections (web, worker, admin), about
// sixty steps of a shop's traffic, a restock script among the writers of
// the stock, a worker blocked in BLMPOP and woken by the web's push, and
// the stock read back after the worker lowers it. The planted shapes
// re-recorded inside it fail at different steps, by the old build they
// run on:
//   - HashDecrementOld: the HGET of apples after the worker's HINCRBY
//     -3 answers the decrement stored twice (ShopInvariants sees it);
//   - WokenRefusesBoth: the worker's BLMPOP, woken by two jobs with
//     COUNT 5, is refused;
//   - ModesOld: the web's ZINCRBY board -30 ann, a negative score, is
//     refused;
//   - SETRANGE checking its offset after the key's existence (and
//     GETRANGE, LRANGE checking the type first): the admin's SETRANGE
//     banner abc x, on a missing key, is answered (ShopSetrangeInvariants
//     sees it);
//   - on a pristine build nothing fails.
//
// The session does not check answers: it records what the build gives.
func Shop(addr string) error { return ShopWith(nil)(addr) }

// ShopWith is Shop with the requests of extra sent by the admin, in
// order, right after the shop opens (before the restock script): a
// planted shape of an earlier round, recorded inside the shop's traffic
// rather than alone. Keys the shape shares with the shop (stock) are
// the shop's.
func ShopWith(extra [][]string) func(addr string) error {
	return func(addr string) error { return shop(addr, extra) }
}

func shop(addr string, extra [][]string) error {
	c, done := connect(addr, 3)
	defer done()
	web, worker, admin, ctx := c[0], c[1], c[2], context.Background()
	do := func(cl *goredis.Client, args ...any) { cl.Do(ctx, args...) }
	// The shop opens: configuration, prices and stock (admin); a user
	// signs in and fills a cart (web).
	do(admin, "SET", "config:currency", "EUR")
	do(admin, "HSET", "prices", "apples", "120", "pears", "90", "plums", "150")
	do(admin, "HSET", "stock", "apples", "10", "pears", "4", "plums", "7")
	do(admin, "SADD", "catalog", "apples", "pears", "plums")
	do(web, "HSET", "user:1", "name", "ann", "visits", "0")
	do(web, "SET", "session:1", "tok-1", "EX", "3600")
	do(web, "GET", "config:currency")
	do(web, "HINCRBY", "user:1", "visits", "1")
	do(web, "SMEMBERS", "catalog")
	do(web, "HMGET", "prices", "apples", "pears", "plums")
	do(web, "SADD", "cart:1", "apples", "pears")
	do(web, "SMEMBERS", "cart:1")
	do(web, "HGET", "stock", "apples")
	do(web, "TTL", "session:1")
	for _, args := range extra {
		a := make([]any, len(args))
		for i, x := range args {
			a[i] = x
		}
		do(admin, a...)
	}
	// Admin restocks apples through a script, reads the stock back and
	// keeps a log.
	do(admin, "EVAL", RestockScript, "1", "stock", "apples", "5")
	do(admin, "HGETALL", "stock")
	do(admin, "LPUSH", "log", "restock apples 5")
	do(admin, "LRANGE", "log", "0", "-1")
	// The web takes an order.
	do(web, "INCR", "orders:seq")
	do(web, "HSET", "order:1", "user", "1", "apples", "3", "pears", "1")
	do(web, "HGETALL", "order:1")
	do(web, "SREM", "cart:1", "apples", "pears")
	do(web, "ZADD", "orders:by-time", "1700000000", "order:1")
	do(web, "ZRANGE", "orders:by-time", "0", "-1")
	// The worker waits for jobs; the web pushes two, which wake it (a
	// second's margin: the pop must be blocked before the push comes).
	pushed := after(time.Second, func() { do(web, "RPUSH", "jobs", "ship:order:1", "mail:order:1") })
	do(worker, "BLMPOP", "0", "1", "jobs", "LEFT", "COUNT", "5")
	pushed()
	// The worker ships: the stock lowered, the order marked.
	do(worker, "HINCRBY", "stock", "apples", "-3")
	do(web, "HGET", "stock", "apples")
	do(worker, "HINCRBY", "stock", "pears", "-1")
	do(worker, "HSET", "order:1", "state", "shipped")
	do(worker, "LPUSH", "log", "shipped order:1")
	// The web keeps a leaderboard of buyers; one loses points.
	do(web, "ZADD", "board", "10", "ann", "20", "bob")
	do(web, "ZINCRBY", "board", "5", "ann")
	do(web, "ZSCORE", "board", "bob")
	do(web, "ZINCRBY", "board", "-30", "ann")
	// A buggy banner job writes at an offset that is not a number, then
	// reads ranges with its arguments swapped, on keys of other types.
	do(admin, "SETRANGE", "banner", "abc", "x")
	do(admin, "SETRANGE", "log", "abc", "x")
	do(admin, "GETRANGE", "log", "abc", "x")
	do(admin, "LRANGE", "config:currency", "abc", "x")
	do(admin, "GETRANGE", "config:currency", "0", "2")
	// Everyone reads on.
	do(web, "HGET", "order:1", "state")
	do(web, "HGET", "stock", "pears")
	do(admin, "HGETALL", "stock")
	do(admin, "LLEN", "log")
	do(admin, "GET", "orders:seq")
	do(web, "HINCRBY", "user:1", "visits", "1")
	do(web, "HGETALL", "user:1")
	do(web, "EXISTS", "cart:1")
	do(worker, "LLEN", "jobs")
	do(admin, "DBSIZE")
	return nil
}

// RestockScript adds to a field of a hash through HINCRBY, as a shop's
// admin script does.
const RestockScript = "return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])"

// ShopInvariants are the shop's invariants: a read of an incremented
// stock field answers what the increment answered.
const ShopInvariants = HashDecrementInvariants

// ShopSetrangeInvariants says SETRANGE refuses an offset that is not an
// integer.
const ShopSetrangeInvariants = `name: setrange-offset-integer
description: SETRANGE refuses an offset that is not an integer
when: req.command == "SETRANGE" && !req.args[1].matches("^-?[0-9]+$")
check: outcome.startsWith("error:")
`
