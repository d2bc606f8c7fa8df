package httpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/rsdump/rsdump/internal/httpc/httpctest"
)

// short is a client whose every wait is short, for tests.
func short() *http.Client {
	return New(Options{ConnectTimeout: time.Second, TLSHandshakeTimeout: time.Second,
		ResponseHeaderTimeout: 300 * time.Millisecond, StallTimeout: 300 * time.Millisecond})
}

// within fails the test when f takes longer than d, and returns f's error.
func within(t *testing.T, d time.Duration, f func() error) error {
	t.Helper()
	start := time.Now()
	err := f()
	if el := time.Since(start); el > d {
		t.Errorf("took %s, want at most %s", el, d)
	}
	return err
}

func wantURL(t *testing.T, err error, url string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one naming %s", url)
	}
	t.Log(err)
	if !strings.Contains(err.Error(), url) {
		t.Errorf("error %q does not name %s", err, url)
	}
}

func TestSilentServer(t *testing.T) {
	t.Parallel()
	u := httpctest.Silent(t) + "/doc.xml"
	err := within(t, 3*time.Second, func() error {
		_, err := Open(t.Context(), short(), u, 1<<20)
		return err
	})
	wantURL(t, err, u)
}

func TestStalledBody(t *testing.T) {
	t.Parallel()
	srv := httpctest.Stalling(t, bytes.Repeat([]byte("x"), 1000), 10)
	u := srv.URL + "/doc.xml"
	var got []byte
	err := within(t, 3*time.Second, func() error {
		rc, err := Open(t.Context(), short(), u, 1<<20)
		if err != nil {
			return err
		}
		defer rc.Close()
		got, err = io.ReadAll(rc)
		return err
	})
	wantURL(t, err, u)
	var se *StallError
	if !errors.As(err, &se) || !errors.Is(err, ErrStalled) || len(got) != 10 {
		t.Errorf("err %v (%T), %d bytes", err, err, len(got))
	}
}

// TestStalledBodyRawClient checks that the stall watch lives in the
// transport: a plain Do and a read of the body fail too.
func TestStalledBodyRawClient(t *testing.T) {
	t.Parallel()
	srv := httpctest.Stalling(t, bytes.Repeat([]byte("x"), 1000), 10)
	resp, err := short().Get(srv.URL + "/p.zip")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	err = within(t, 3*time.Second, func() error { _, err := io.ReadAll(resp.Body); return err })
	wantURL(t, err, srv.URL+"/p.zip")
}

// TestSlowNotStalled: a body that trickles, and a reader that pauses
// longer than the stall timeout between reads, are not stalls.
func TestSlowNotStalled(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range 4 {
			w.Write([]byte("ab"))
			w.(http.Flusher).Flush()
			time.Sleep(150 * time.Millisecond)
		}
	}))
	defer srv.Close()
	rc, err := Open(t.Context(), short(), srv.URL, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil || string(b) != "abababab" {
		t.Fatalf("%q, %v", b, err)
	}
	resp, err := short().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	time.Sleep(time.Second) // the whole body is in buffers by now
	if b, err := io.ReadAll(resp.Body); err != nil || len(b) != 8 {
		t.Fatalf("%q, %v", b, err)
	}
}

func TestUserAgent(t *testing.T) {
	t.Parallel()
	seen := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen <- r.UserAgent() }))
	defer srv.Close()
	rc, err := Open(t.Context(), short(), srv.URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if ua := <-seen; !strings.HasPrefix(ua, "rsdump/") {
		t.Errorf("User-Agent %q", ua)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	req.Header.Set("User-Agent", "mine")
	resp, err := short().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ua := <-seen; ua != "mine" {
		t.Errorf("User-Agent %q, want the caller's", ua)
	}
	if req.Header.Get("User-Agent") != "mine" || len(req.Header) != 1 {
		t.Errorf("the caller's request changed: %v", req.Header)
	}
}

func TestRedirectScheme(t *testing.T) {
	t.Parallel()
	for _, to := range []string{"ftp://127.0.0.1/x", "file:///etc/passwd"} {
		srv := httptest.NewServer(http.RedirectHandler(to, http.StatusFound))
		_, err := Open(t.Context(), short(), srv.URL+"/a", 0)
		srv.Close()
		wantURL(t, err, srv.URL+"/a")
		wantURL(t, err, to)
		if !errors.Is(err, ErrScheme) {
			t.Errorf("%v, want ErrScheme", err)
		}
	}
}

func TestRedirectLimit(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		var n int
		fmt.Sscanf(r.URL.Path, "/%d", &n)
		if n < 3 {
			http.Redirect(w, r, fmt.Sprintf("/%d", n+1), http.StatusFound)
			return
		}
		w.Write([]byte("done"))
	}))
	defer srv.Close()
	c := New(Options{MaxRedirects: 3, ResponseHeaderTimeout: time.Second})
	rc, err := Open(t.Context(), c, srv.URL+"/0", 0)
	if err != nil {
		t.Fatalf("3 redirects: %v", err)
	}
	rc.Close()
	c = New(Options{MaxRedirects: 2, ResponseHeaderTimeout: time.Second})
	hits.Store(0)
	_, err = Open(t.Context(), c, srv.URL+"/0", 0)
	if !errors.Is(err, ErrRedirects) || hits.Load() != 3 {
		t.Errorf("%v after %d requests, want ErrRedirects after 3", err, hits.Load())
	}
	wantURL(t, err, srv.URL+"/2")
	wantURL(t, err, srv.URL+"/3")
}

func TestStatus(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := Open(t.Context(), short(), srv.URL+"/missing", 0)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 404 {
		t.Fatalf("%v, want a 404 StatusError", err)
	}
	wantURL(t, err, srv.URL+"/missing")
	if !strings.Contains(err.Error(), "404 Not Found") {
		t.Errorf("%v does not give the status", err)
	}
}

func TestSizeCap(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("0123456789", 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // no Content-Length
		}
		io.WriteString(w, body)
	}))
	defer srv.Close()
	for _, path := range []string{"/sized", "/chunked"} {
		u := srv.URL + path
		rc, err := Open(t.Context(), short(), u, 100)
		if err != nil {
			t.Fatal(err)
		}
		if err := iotest.TestReader(rc, []byte(body)); err != nil {
			t.Errorf("%s at the cap: %v", path, err)
		}
		rc.Close()
		err = func() error {
			rc, err := Open(t.Context(), short(), u, 99)
			if err != nil {
				return err
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if len(b) > 99 {
				t.Errorf("%s: read %d bytes past a cap of 99", path, len(b))
			}
			return err
		}()
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: %v, want ErrTooLarge", path, err)
		}
		wantURL(t, err, u)
	}
}

func TestProxyFromEnvironment(t *testing.T) {
	t.Parallel()
	tr := NewTransport(Options{}).(*transport)
	if tr.base.Proxy == nil {
		t.Error("no proxy function")
	}
}

// readAll reads an opener's body whole and closes it.
func readAll(rc io.ReadCloser, err error) (string, error) {
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}
