package record_test

import (
	"bufio"
	"io"
	"net"
	"testing"
)

// BenchmarkProxyRoundTrip measures one client's sequential round trips,
// SET k v and its +OK, over one raw TCP connection to a real redis-server:
// directly, and through the recording proxy. The difference is what the
// proxy adds to each round trip (two extra hops and the recording).
func BenchmarkProxyRoundTrip(b *testing.B) {
	srv := startRedis(b)
	b.Run("direct", func(b *testing.B) {
		roundTrips(b, srv.Addr())
	})
	b.Run("kavach", func(b *testing.B) {
		rec := startRecording(b, srv.Addr(), nil)
		roundTrips(b, rec.addr())
	})
}

func roundTrips(b *testing.B, addr string) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	req := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
	want := "+OK\r\n"
	r := bufio.NewReader(conn)
	reply := make([]byte, len(want))
	for b.Loop() {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(r, reply); err != nil {
			b.Fatal(err)
		}
		if string(reply) != want {
			b.Fatalf("reply %q, want %q", reply, want)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/roundtrip")
}
