// Command plainproxy is the baseline of bench/record.sh: a plain
// byte-copying TCP proxy that keeps connections one to one. Each accepted
// connection gets its own upstream connection and two io.Copy loops, and
// nothing else: no parsing, no recording. It is the ceiling any in-path
// proxy can reach, so `kavach record` is measured as a ratio of it.
//
//	plainproxy -listen 127.0.0.1:7001 -upstream 127.0.0.1:6379
package main

import (
	"flag"
	"io"
	"log"
	"net"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "accept clients on `ADDR`")
	upstream := flag.String("upstream", "", "forward every connection to `ADDR`")
	flag.Parse()
	if *upstream == "" {
		log.Fatal("plainproxy: -upstream is required")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("plainproxy: %s -> %s", ln.Addr(), *upstream)
	for {
		client, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go serve(client.(*net.TCPConn), *upstream)
	}
}

// serve copies both ways until both directions have ended, passing each
// half-close on to the other side.
func serve(client *net.TCPConn, upstream string) {
	defer client.Close()
	c, err := net.Dial("tcp", upstream)
	if err != nil {
		log.Printf("plainproxy: dial %s: %v", upstream, err)
		return
	}
	server := c.(*net.TCPConn)
	defer server.Close()
	done := make(chan struct{})
	go func() {
		io.Copy(server, client)
		server.CloseWrite()
		close(done)
	}()
	io.Copy(client, server)
	client.CloseWrite()
	<-done
}
