package httpctest

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// IdleClosing serves h over HTTP/1.1 on a loopback port with connections
// kept alive, and closes a connection that waits idle for its next
// request for idle (its first may take a second), writing "408 Request Timeout" first
// when with408, as servers do whose keep-alive time-out is short: a
// request sent on such a connection as it closes crosses the close, or
// the 408, on the wire. Each answer is h's, buffered whole and sent with
// its length. It returns the server's URL and the count of connections
// it closed idle. The server stops at the end of the test.
func IdleClosing(tb testing.TB, h http.Handler, idle time.Duration, with408 bool) (string, *atomic.Int64) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &idleServer{h: h, idle: idle, with408: with408, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept(ln)
	tb.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return "http://" + ln.Addr().String(), &s.closed
}

type idleServer struct {
	h       http.Handler
	idle    time.Duration
	with408 bool
	closed  atomic.Int64
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]bool
}

func (s *idleServer) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *idleServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReader(c)
	bw := bufio.NewWriter(c)
	for wait := time.Second; ; wait = s.idle {
		c.SetReadDeadline(time.Now().Add(wait))
		if _, err := br.Peek(1); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				s.closed.Add(1)
				if s.with408 {
					c.SetWriteDeadline(time.Now().Add(time.Second))
					fmt.Fprint(c, "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
				}
			}
			return
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		req.RemoteAddr = c.RemoteAddr().String()
		rec := httptest.NewRecorder()
		s.h.ServeHTTP(rec, req)
		resp := rec.Result()
		resp.Request = req
		resp.ContentLength = int64(rec.Body.Len())
		resp.Header.Set("Content-Length", strconv.Itoa(rec.Body.Len()))
		resp.Header.Del("Transfer-Encoding")
		if resp.Write(bw) != nil || bw.Flush() != nil || req.Close {
			return
		}
	}
}
