// Command wan stands between a client and a loopback server and delays
// every byte by half a round-trip time in each direction, as a wide-area
// link does: a benchmark run through it pays the RTT on every connection
// set-up and every request/response turn, while bytes already in flight
// stream on (up to a bounded window per direction), as over TCP on a real
// link. It is the latency half of netem, without touching the machine's
// loopback interface that other work shares.
//
// Usage: go run ./benchmarks/wan -rtt 20ms -map 127.0.0.1:18730=127.0.0.1:18830,...
//
// Each LISTEN=UPSTREAM pair listens on LISTEN and forwards to UPSTREAM;
// both must be loopback addresses. It runs until killed.
package main

import (
	"flag"
	"log"
	"net"
	"strings"
	"time"
)

// window bounds the bytes held per direction of one connection: at 10 ms
// one way, 256 chunks of 32 KiB (8 MiB) allow about 800 MB/s, more than a
// loopback server here delivers, so the link adds latency, not a cap.
const (
	chunkSize = 32 << 10
	window    = 256
)

func main() {
	rtt := flag.Duration("rtt", 20*time.Millisecond, "round-trip time to add")
	pairs := flag.String("map", "", "comma-separated LISTEN=UPSTREAM loopback host:port pairs")
	flag.Parse()
	errc := make(chan error)
	for _, p := range strings.Split(*pairs, ",") {
		listen, upstream, ok := strings.Cut(p, "=")
		if !ok || !loopback(listen) || !loopback(upstream) {
			log.Fatalf("%q: want LISTEN=UPSTREAM, both loopback host:port", p)
		}
		l, err := net.Listen("tcp", listen)
		if err != nil {
			log.Fatal(err)
		}
		go func() { errc <- serve(l, upstream, *rtt/2) }()
	}
	log.Fatal(<-errc)
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}

func serve(l net.Listener, upstream string, oneWay time.Duration) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			// The client's SYN crosses the link before the server sees it,
			// and the SYN-ACK crosses back: one RTT before the first byte.
			time.Sleep(oneWay)
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				return
			}
			time.Sleep(oneWay)
			done := make(chan struct{})
			go func() { pipe(u, c, oneWay); close(done) }()
			pipe(c, u, oneWay)
			<-done
			c.Close()
			u.Close()
		}()
	}
}

// chunk is bytes read at one moment, due at the other end oneWay later.
type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst, each chunk delivered oneWay after it was read;
// reading goes on meanwhile, so a long response is delayed, not slowed.
// The end of src is delivered as a half-close, in its turn.
func pipe(dst, src net.Conn, oneWay time.Duration) {
	q := make(chan chunk, window)
	go func() {
		defer close(q)
		for {
			b := make([]byte, chunkSize)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{b[:n], time.Now().Add(oneWay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			// The other end is gone: end both directions, and let the
			// reader run out so it does not block on a full queue.
			dst.Close()
			src.Close()
			for range q {
			}
			return
		}
	}
	dst.(*net.TCPConn).CloseWrite()
}
