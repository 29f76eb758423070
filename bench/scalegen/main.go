// Command scalegen writes a long fixture for bench/scale.sh: one client
// connection doing STEPS requests to Redis, SETs and GETs of small values
// in turn, every reply recorded, and last the incident of
// examples/redis-getrange-crash (a GETRANGE with a start far before the
// string, which the old build dies on), marked as the failure.
//
//	scalegen -steps 2000000 -out long.kavach
package main

import (
	"flag"
	"fmt"
	"log"
	"strconv"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
)

func main() {
	steps := flag.Int("steps", 2000000, "write `N` steps (at least 2)")
	out := flag.String("out", "", "write the fixture to `FILE` (it must not exist)")
	gap := flag.Duration("gap", 20*time.Microsecond, "recorded time between one event and the next")
	flag.Parse()
	if *out == "" || *steps < 2 {
		log.Fatal("scalegen: need -out FILE and -steps N >= 2")
	}
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	w, err := fixtures.Create(*out, fixtures.Header{Protocol: "resp", Start: start, Upstream: "127.0.0.1:6379"})
	if err != nil {
		log.Fatal(err)
	}
	var off time.Duration
	event := func(dir kavach.Direction, data string) {
		off += *gap
		if _, err := w.Event(kavach.Event{Conn: 1, Dir: dir, Offset: off, Data: []byte(data)}); err != nil {
			log.Fatal(err)
		}
	}
	event(kavach.Open, "")
	n := *steps - 2
	for i := 0; i < n; i++ {
		key := "key:" + strconv.Itoa(i/2)
		if i%2 == 0 {
			val := "value-" + strconv.Itoa(i)
			event(kavach.Request, resp("SET", key, val))
			event(kavach.Response, "+OK\r\n")
		} else {
			val := "value-" + strconv.Itoa(i-1)
			event(kavach.Request, resp("GET", key))
			event(kavach.Response, "$"+strconv.Itoa(len(val))+"\r\n"+val+"\r\n")
		}
	}
	event(kavach.Request, resp("SET", "greeting", "hello world"))
	event(kavach.Response, "+OK\r\n")
	event(kavach.Request, resp("GETRANGE", "greeting", "-100", "-1"))
	event(kavach.Close, "server")
	if err := w.Failure(kavach.Failure{Step: *steps, Oracle: kavach.Oracle{Kind: kavach.Crash}, Signature: "crash", Evidence: "exit status 134"}); err != nil {
		log.Fatal(err)
	}
	if err := w.Close(fixtures.End{Duration: off}); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d steps\n", *out, *steps)
}

// resp encodes a command as a RESP array of bulk strings.
func resp(args ...string) string {
	s := "*" + strconv.Itoa(len(args)) + "\r\n"
	for _, a := range args {
		s += "$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n"
	}
	return s
}
