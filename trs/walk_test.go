package trs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// chainServer serves a Change Log whose segment /seg/N has one event
// and a trs:previous to /seg/next(N), and a Base whose page /page/N has
// one member and a next link to /page/next(N), each after delay. It
// counts the requests.
type chainServer struct {
	*httptest.Server
	next     func(n int) int
	delay    time.Duration
	requests atomic.Int64
}

func newChainServer(t *testing.T, next func(int) int, delay time.Duration) *chainServer {
	c := &chainServer{next: next, delay: delay}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.Close)
	return c
}

func (c *chainServer) serve(w http.ResponseWriter, r *http.Request) {
	c.requests.Add(1)
	select {
	case <-time.After(c.delay):
	case <-r.Context().Done():
		return
	}
	kind, num, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	n, _ := strconv.Atoi(num)
	w.Header().Set("Content-Type", turtleContentType)
	switch kind {
	case "seg":
		fmt.Fprintf(w, `<%s/seg/%d> a <%sChangeLog> ; <%sprevious> <%s/seg/%d> ; <%schange> <urn:e:%d> .
<urn:e:%d> a <%sCreation> ; <%schanged> <%s/r/%d> ; <%sorder> %d .
`, c.URL, n, NSTRS, NSTRS, c.URL, c.next(n), NSTRS, n, n, NSTRS, NSTRS, c.URL, n, NSTRS, 1_000_000_000-n)
	case "page":
		w.Header().Set("Link", fmt.Sprintf("<%s/page/%d>; rel=\"next\"", c.URL, c.next(n)))
		fmt.Fprintf(w, `<%s/base> a <%s> ; <%s> <%s/r/%d> ; <%scutoffEvent> <%s> .
`, c.URL, ldpDirectContainer, ldpMember, c.URL, n, NSTRS, rdfNil)
	default:
		http.NotFound(w, r)
	}
}

// set is the Tracked Resource Set whose newest segment is /seg/1's.
func (c *chainServer) set(t *testing.T, cl *Client) *Set {
	seg, err := cl.Segment(context.Background(), c.URL+"/seg/1")
	if err != nil {
		t.Fatal(err)
	}
	return &Set{URL: c.URL + "/trs", Base: c.URL + "/page/1", Log: seg}
}

// TestWalkBounds: a Change Log whose trs:previous links never end, or
// never reach the sync point, or go round, and a Base whose next links
// never end, each stop with an error after Limits.Segments or
// Limits.Pages documents, or Limits.Time, whichever comes first.
func TestWalkBounds(t *testing.T) {
	t.Parallel()
	endless := func(n int) int { return n + 1 }
	cases := []struct {
		name     string
		next     func(int) int
		delay    time.Duration
		limits   Limits
		base     bool
		want     error
		wantText string
		most     int64 // requests
	}{
		{name: "endless log", next: endless, limits: Limits{Segments: 40}, want: ErrWalkBound, wantText: "past 40 segments", most: 41},
		{name: "round log", next: func(n int) int { return n%7 + 1 }, want: nil, wantText: "go round", most: 8},
		{name: "slow endless log", next: endless, delay: 20 * time.Millisecond, limits: Limits{Time: 300 * time.Millisecond}, want: ErrWalkBound, wantText: "took more than 300ms", most: 20},
		{name: "endless base", next: endless, limits: Limits{Pages: 30}, base: true, want: ErrWalkBound, wantText: "past 30 pages", most: 30},
		{name: "slow endless base", next: endless, delay: 20 * time.Millisecond, limits: Limits{Time: 300 * time.Millisecond}, base: true, want: ErrWalkBound, wantText: "took more than 300ms", most: 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := newChainServer(t, c.next, c.delay)
			cl := &Client{Limits: c.limits}
			start := time.Now()
			var err error
			if c.base {
				_, err = cl.Base(context.Background(), srv.URL+"/page/1", func(BasePage) error { return nil })
			} else {
				_, err = cl.Walk(context.Background(), srv.set(t, cl), "urn:never", func(Event) error { return nil })
			}
			if err == nil || c.want != nil && !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.wantText) || !strings.Contains(err.Error(), srv.URL) {
				t.Fatalf("%v, want an error naming the server, %q (%v)", err, c.wantText, c.want)
			}
			if n := srv.requests.Load(); n > c.most {
				t.Errorf("%d requests, want at most %d", n, c.most)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("stopped after %s", d)
			}
		})
	}
}

// TestWalkDefaultBound: with no Limits set, a Change Log that never ends
// is stopped at DefaultSegments, well before DefaultWalkTime.
func TestWalkDefaultBound(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 requests on loopback")
	}
	t.Parallel()
	srv := newChainServer(t, func(n int) int { return n + 1 }, 0)
	cl := &Client{}
	_, err := cl.Walk(context.Background(), srv.set(t, cl), "urn:never", func(Event) error { return nil })
	if !errors.Is(err, ErrWalkBound) || srv.requests.Load() != DefaultSegments {
		t.Errorf("%d requests: %v, want %d and ErrWalkBound", srv.requests.Load(), err, DefaultSegments)
	}
}
