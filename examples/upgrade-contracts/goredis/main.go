// Command goredis is a small service's session with Redis through
// go-redis: the second contract of the real-upgrade test bed
// (docs/upgrade.md). It connects to the address given, subscribes on one
// connection while another publishes, and runs the commands a typical
// service sends: strings with expiry, counters, a hash, a sorted set, a
// pipeline and a transaction.
//
//	go run ./examples/upgrade-contracts/goredis 127.0.0.1:6379
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: goredis HOST:PORT")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "goredis:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr string) error {
	// One connection for commands, one for the subscription: no pool
	// growing behind the session's back.
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, MinIdleConns: 0})
	defer rdb.Close()
	sub := rdb.Subscribe(ctx, "orders")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		return err
	}
	msgs := sub.Channel()

	if err := rdb.Set(ctx, "user:42:name", "ada", 0).Err(); err != nil {
		return err
	}
	rdb.Set(ctx, "session:42", "token", 100*time.Second)
	rdb.TTL(ctx, "session:42")
	rdb.Get(ctx, "user:42:name")
	rdb.Get(ctx, "missing")
	rdb.Incr(ctx, "visits")
	rdb.IncrBy(ctx, "visits", 10)
	rdb.HSet(ctx, "user:42", "name", "ada", "plan", "pro")
	rdb.HGetAll(ctx, "user:42")
	rdb.ZAdd(ctx, "scores", redis.Z{Score: 3, Member: "ada"}, redis.Z{Score: 5, Member: "bob"})
	rdb.ZRangeWithScores(ctx, "scores", 0, -1)
	rdb.Publish(ctx, "orders", "order:1 created")
	<-msgs // the subscriber got it
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, "pipelined")
		p.LPush(ctx, "queue", "job1", "job2")
		p.LLen(ctx, "queue")
		return nil
	}); err != nil {
		return err
	}
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Decr(ctx, "visits")
		p.Expire(ctx, "visits", time.Hour)
		return nil
	}); err != nil {
		return err
	}
	rdb.Publish(ctx, "orders", "order:1 paid")
	<-msgs
	rdb.Del(ctx, "session:42")
	rdb.Exists(ctx, "session:42")
	return rdb.Ping(ctx).Err()
}
