// Command plainproxy is the baseline of bench/record.sh: a plain
// byte-copying TCP proxy that keeps connections one to one. Each accepted
// connection gets its own upstream connection and two io.Copy loops, and
// nothing else: no parsing, no recording. It is the ceiling any in-path
// proxy can reach, so `kavach record` is measured as a ratio of it.
//
// Between two TCP connections on Linux, io.Copy moves the bytes with
// splice(2): they never enter the proxy's memory. A recorder must read
// every byte, so -copy gives the second baseline: the same proxy reading
// into a 64 KiB buffer and writing it out (read(2) and write(2), as the
// recorder forwards), nothing else.
//
//	plainproxy -listen 127.0.0.1:7001 -upstream 127.0.0.1:6379
//	plainproxy -copy -listen 127.0.0.1:7002 -upstream 127.0.0.1:6379
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
	flag.BoolVar(&userSpace, "copy", false, "copy through a buffer in user space instead of splice(2)")
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
		forward(server, client)
		server.CloseWrite()
		close(done)
	}()
	forward(client, server)
	client.CloseWrite()
	<-done
}

// userSpace is -copy: every byte read into the proxy's memory.
var userSpace bool

// forward copies src to dst until src ends: by splice(2) (io.Copy between
// TCP connections), or with -copy through a buffer (the wrappers hide
// ReadFrom and WriteTo, which is how io.Copy would pick splice).
func forward(dst, src *net.TCPConn) {
	if !userSpace {
		io.Copy(dst, src)
		return
	}
	io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, make([]byte, 64<<10))
}
