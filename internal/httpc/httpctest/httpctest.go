// Package httpctest has loopback servers that misbehave the way a client
// must survive: one that accepts connections and never answers, one that
// sends headers and then stalls the body, and an answer that drips.
package httpctest

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Silent listens on 127.0.0.1, accepts every connection, reads nothing
// and answers nothing. It returns the server's base URL ("http://IP:PORT").
func Silent(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// Stalling serves data at every path, honouring a Range header, but sends
// no byte at or past offset after: a response that reaches it sends its
// headers and what comes before, then waits until the client goes away or
// the test ends. It returns the server.
func Stalling(t testing.TB, data []byte, after int64) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first, last := int64(0), int64(len(data))-1
		f, l, partial := parseRange(r.Header.Get("Range"), int64(len(data)))
		if partial {
			first, last = f, l
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", f, l, len(data)))
		}
		w.Header().Set("Accept-Ranges", "bytes")
		w.Header().Set("Content-Length", strconv.FormatInt(last-first+1, 10))
		if partial {
			w.WriteHeader(http.StatusPartialContent)
		}
		w.Write(data[first:min(last+1, max(after, first))])
		if last < after {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before Close, which waits for handlers
	return srv
}

// parseRange reads "bytes=FIRST-LAST" or "bytes=FIRST-".
func parseRange(v string, size int64) (first, last int64, ok bool) {
	spec, found := strings.CutPrefix(v, "bytes=")
	a, b, found2 := strings.Cut(spec, "-")
	if !found || !found2 {
		return 0, 0, false
	}
	first, err := strconv.ParseInt(a, 10, 64)
	if err != nil || first >= size {
		return 0, 0, false
	}
	last = size - 1
	if b != "" {
		l, err := strconv.ParseInt(b, 10, 64)
		if err != nil || l < first {
			return 0, 0, false
		}
		last = min(l, size-1)
	}
	return first, last, true
}

// Drip answers with body one byte at a time, a byte every `every`, with
// its Content-Length: a server that never stalls long enough for a stall
// timeout, yet would take len(body) times every. It stops when the client
// goes away.
func Drip(w http.ResponseWriter, r *http.Request, body []byte, every time.Duration) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	t := time.NewTicker(every)
	defer t.Stop()
	for _, b := range body {
		if _, err := w.Write([]byte{b}); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}

// DripPath serves path with the body h answers a plain GET of it with
// (its Range and conditional headers left out), through Drip, a byte
// every `every`; an answer of h other than 200 goes out as it is. h
// serves every other path.
func DripPath(h http.Handler, path string, every time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			h.ServeHTTP(w, r)
			return
		}
		plain := r.Clone(r.Context())
		plain.Method, plain.Header = http.MethodGet, http.Header{}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, plain)
		if rec.Code != http.StatusOK {
			maps.Copy(w.Header(), rec.Header())
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
			return
		}
		Drip(w, r, rec.Body.Bytes(), every)
	})
}
