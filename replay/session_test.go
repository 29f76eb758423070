package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kavach-dev/kavach"
)

// realisticSession records, through the real proxy in front of build, a
// session of a few hundred commands of every kind a service would send:
// strings, hashes, lists, sets, sorted sets, streams, expiry, EVAL, SCAN,
// and a BLPOP on one connection answered by an LPUSH on another.
func realisticSession(t *testing.T, build string) []kavach.Event {
	t.Helper()
	rec, _ := recordWith(t, build, func(addr string) {
		ctx := context.Background()
		a := goredis.NewClient(&goredis.Options{Addr: addr, Protocol: 3, PoolSize: 1})
		b := goredis.NewClient(&goredis.Options{Addr: addr, Protocol: 2, PoolSize: 1})
		b.Ping(ctx)
		for i := 0; i < 20; i++ {
			k := fmt.Sprintf("user:%d", i)
			a.Set(ctx, k, i, 0)
			a.Incr(ctx, k)
			a.Append(ctx, k, "x")
			a.Get(ctx, k)
			a.HSet(ctx, "h:"+k, "name", k, "age", i)
			a.HIncrBy(ctx, "h:"+k, "age", 1)
			a.RPush(ctx, "list", k)
			a.SAdd(ctx, "set", k)
			a.ZAdd(ctx, "z", goredis.Z{Score: float64(i % 7), Member: k})
			a.XAdd(ctx, &goredis.XAddArgs{Stream: "events", Values: map[string]any{"user": k}})
			a.Expire(ctx, k, time.Duration(i+1)*time.Second)
		}
		a.HGetAll(ctx, "h:user:3")
		a.LRange(ctx, "list", 0, -1)
		a.SMembers(ctx, "set")
		a.SInter(ctx, "set", "set")
		a.ZRangeWithScores(ctx, "z", 0, -1)
		a.XRange(ctx, "events", "-", "+")
		a.XLen(ctx, "events")
		a.Eval(ctx, "return redis.call('INCRBY', KEYS[1], ARGV[1])", []string{"counter"}, 5)
		a.Eval(ctx, "return {KEYS[1], ARGV[1]}", []string{"k"}, "v")
		a.Scan(ctx, 0, "user:*", 1000)
		a.Keys(ctx, "h:*")
		a.TTL(ctx, "user:5")
		a.Time(ctx)
		time.Sleep(1200 * time.Millisecond) // user:0 expires in the recording's time
		a.Get(ctx, "user:0")
		a.Exists(ctx, "user:0", "user:1", "user:19")
		a.DBSize(ctx)
		popped := make(chan struct{})
		go func() {
			a.BLPop(ctx, 5*time.Second, "jobs")
			close(popped)
		}()
		time.Sleep(200 * time.Millisecond)
		b.LPush(ctx, "jobs", "j1")
		<-popped
		for i := 0; i < 30; i++ {
			a.ZIncrBy(ctx, "z", 1, fmt.Sprintf("user:%d", i%20))
			a.LPop(ctx, "list")
		}
		a.ZRevRangeWithScores(ctx, "z", 0, 4)
		a.Do(ctx, "OBJECT", "ENCODING", "z")
		a.Close()
		b.Close()
	})
	return rec
}
