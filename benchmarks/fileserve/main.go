// Command fileserve serves a directory over HTTP (with Range, via
// net/http.FileServer) on loopback addresses only, as the mirrors of
// benchmarks/compare.sh. It runs until killed.
//
// Usage: go run ./benchmarks/fileserve -dir DIR -addr 127.0.0.1:18490,127.0.0.2:18490
package main

import (
	"flag"
	"log"
	"net"
	"net/http"
	"strings"
)

func main() {
	dir := flag.String("dir", ".", "directory to serve")
	addrs := flag.String("addr", "127.0.0.1:18490,127.0.0.2:18490", "comma-separated loopback host:port to listen on")
	flag.Parse()
	h := http.FileServer(http.Dir(*dir))
	errc := make(chan error)
	for _, a := range strings.Split(*addrs, ",") {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			log.Fatal(err)
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			log.Fatalf("%s: only loopback IP addresses are served", a)
		}
		l, err := net.Listen("tcp", a)
		if err != nil {
			log.Fatal(err)
		}
		go func() { errc <- http.Serve(l, h) }()
	}
	log.Fatal(<-errc)
}
