package httpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/httpc/httpctest"
)

// paced is a client held to 100 B/s over 300 ms, whose stall timeout a
// byte every 20 ms never reaches.
func paced() *http.Client {
	return New(Options{StallTimeout: time.Second, MinSpeed: 100, MinSpeedWindow: 300 * time.Millisecond})
}

func dripServer(t *testing.T, every time.Duration) string {
	body := bytes.Repeat([]byte("d"), 100000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpctest.Drip(w, r, body, every)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/list.xml"
}

// TestMinSpeedDocument: a document dripping 50 B/s fails Open's reader
// within about the speed window, with a *SpeedError naming the URL.
func TestMinSpeedDocument(t *testing.T) {
	t.Parallel()
	u := dripServer(t, 20*time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := within(t, 2*time.Second, func() error {
		rc, err := Open(ctx, paced(), u, 1<<20)
		if err != nil {
			return err
		}
		defer rc.Close()
		_, err = io.Copy(io.Discard, rc)
		return err
	})
	wantURL(t, err, u)
	var se *SpeedError
	if !errors.As(err, &se) || !errors.Is(err, ErrTooSlow) || se.Speed >= 100 {
		t.Errorf("err %v (%T), want a *SpeedError under 100 B/s", err, err)
	}
}

// TestMinSpeedCountsOnlyReads: a caller that reads a fast body slowly
// (busy between reads, as a list applied part by part is) is not a slow
// server.
func TestMinSpeedCountsOnlyReads(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("f"), 64<<10))
	}))
	defer srv.Close()
	rc, err := Open(t.Context(), paced(), srv.URL+"/index.xml", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	buf := make([]byte, 16<<10)
	for range 4 {
		if _, err := io.ReadFull(rc, buf); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestMinSpeedNotOnRawDo: a body read through the client's own Do is not
// judged: transfer, which streams pieces that way, judges each mirror's
// pace over all its connections itself.
func TestMinSpeedNotOnRawDo(t *testing.T) {
	t.Parallel()
	u := dripServer(t, 20*time.Millisecond)
	resp, err := paced().Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.CopyN(io.Discard, resp.Body, 30) // 600 ms, two windows
	if err != nil || n != 30 {
		t.Errorf("%d bytes, %v", n, err)
	}
}

// TestPaceWindowNotStarted: bytes added before any Begin stored its time
// (a second request went out while the first was between counting itself
// and storing its time) start the window; they are not judged over the
// time since 1970, and the next window is judged from them.
func TestPaceWindowNotStarted(t *testing.T) {
	t.Parallel()
	var p Pace
	now := time.Now().UnixNano()
	if err := p.Add("http://127.0.0.1:1/f.bin", 10, now, 1024, time.Second); err != nil {
		t.Fatalf("first bytes judged before the window began: %v", err)
	}
	later := now + int64(1500*time.Millisecond)
	err := p.Add("http://127.0.0.1:1/f.bin", 10, later, 1024, time.Second)
	if err == nil || err.Window != 1500*time.Millisecond {
		t.Fatalf("got %v, want the window judged over 1.5s", err)
	}
}
