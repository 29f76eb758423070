// Command widefixture writes a fixture whose failing request has many
// arguments: a SET of key z, then one ZADD on z of N score-member
// arguments, refused with WRONGTYPE. It is for measuring what
// `kavach variants` costs on a wide request (bench/README.md).
//
//	go run ./bench/widefixture -n 2000 -o wide.kavach
package main

import (
	"flag"
	"log"
	"strconv"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
)

func main() {
	n := flag.Int("n", 2000, "arguments of the failing ZADD")
	out := flag.String("o", "wide.kavach", "fixture to write")
	flag.Parse()
	w, err := fixtures.Create(*out, fixtures.Header{FormatVersion: 1, Protocol: "resp", Upstream: "127.0.0.1:6379", Start: time.Unix(1700000000, 0).UTC(), KavachVersion: "widefixture"})
	if err != nil {
		log.Fatal(err)
	}
	var seq uint64
	ev := func(dir kavach.Direction, data []byte) {
		seq++
		if _, err := w.Event(kavach.Event{Seq: seq, Conn: 1, Dir: dir, Offset: time.Duration(seq) * time.Millisecond, Data: data}); err != nil {
			log.Fatal(err)
		}
	}
	ev(kavach.Open, nil)
	ev(kavach.Request, redis.AppendCommand(nil, []byte("SET"), []byte("z"), []byte("v")))
	ev(kavach.Response, []byte("+OK\r\n"))
	args := [][]byte{[]byte("ZADD"), []byte("z")}
	for i := 0; len(args) < *n+1; i++ {
		args = append(args, []byte(strconv.Itoa(i)), []byte("m"+strconv.Itoa(i)))
	}
	ev(kavach.Request, redis.AppendCommand(nil, args...))
	ev(kavach.Response, []byte("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"))
	if err := w.Failure(kavach.Failure{Step: 2, Oracle: kavach.Oracle{Kind: kavach.Error, Class: "WRONGTYPE"}, Signature: "error:WRONGTYPE Operation against a key holding the wrong kind of value"}); err != nil {
		log.Fatal(err)
	}
	if err := w.Close(fixtures.End{}); err != nil {
		log.Fatal(err)
	}
}
