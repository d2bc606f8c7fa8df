package httpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fast is a client whose retries wait little, for tests.
func fast(r Retry) *http.Client {
	return New(Options{ResponseHeaderTimeout: 2 * time.Second, StallTimeout: 2 * time.Second, Retry: r})
}

// counted serves answer(n) to the nth request (from 1), counting them.
func counted(t *testing.T, answer func(n int64, w http.ResponseWriter, r *http.Request)) (url string, hits *atomic.Int64) {
	hits = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer(hits.Add(1), w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/doc.xml", hits
}

func get(c *http.Client, ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	_, rc, err := DoRetry(c, req, 1<<20)
	return readAll(rc, err)
}

// A 503, then a 200: the document is read, on the second request.
func TestRetryUnavailableOnce(t *testing.T) {
	t.Parallel()
	url, hits := counted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "<urlset/>")
	})
	body, err := get(fast(Retry{Base: 10 * time.Millisecond}), t.Context(), url)
	if err != nil || body != "<urlset/>" || hits.Load() != 2 {
		t.Fatalf("%q, %v after %d requests; want the document after 2", body, err, hits.Load())
	}
}

// A 429 with Retry-After: 1 is asked again after a second, not after the
// backoff's 10 ms.
func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	var second atomic.Int64
	start := time.Now()
	url, hits := counted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		second.Store(int64(time.Since(start)))
		io.WriteString(w, "ok")
	})
	body, err := get(fast(Retry{Base: 10 * time.Millisecond}), t.Context(), url)
	if err != nil || body != "ok" || hits.Load() != 2 {
		t.Fatalf("%q, %v after %d requests", body, err, hits.Load())
	}
	if d := time.Duration(second.Load()); d < 900*time.Millisecond || d > 5*time.Second {
		t.Errorf("asked again after %v, want about 1s (Retry-After)", d)
	}
}

// A Retry-After longer than MaxWait waits MaxWait.
func TestRetryAfterCapped(t *testing.T) {
	t.Parallel()
	url, hits := counted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "3600")
			http.Error(w, "later", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	})
	var err error
	within(t, 3*time.Second, func() error {
		_, err = get(fast(Retry{Base: 10 * time.Millisecond, MaxWait: 200 * time.Millisecond}), t.Context(), url)
		return err
	})
	if err != nil || hits.Load() != 2 {
		t.Fatalf("%v after %d requests", err, hits.Load())
	}
}

// A 500 on every request gives up after Attempts, within the time the
// waits take, with an error naming the URL, the status and the count.
func TestRetryPermanentFailure(t *testing.T) {
	t.Parallel()
	url, hits := counted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	})
	var err error
	within(t, 3*time.Second, func() error { // waits 50+100+200 ms
		_, err = get(fast(Retry{Attempts: 4, Base: 50 * time.Millisecond}), t.Context(), url)
		return err
	})
	wantURL(t, err, url)
	var re *RetryError
	var se *StatusError
	if !errors.As(err, &re) || re.Attempts != 4 || !errors.As(err, &se) || se.Code != 500 {
		t.Errorf("%v: want a *RetryError of 4 attempts around a 500", err)
	}
	if !strings.Contains(err.Error(), "4 attempts") || !strings.Contains(err.Error(), "500") {
		t.Errorf("%q does not say 500 and 4 attempts", err)
	}
	if hits.Load() != 4 {
		t.Errorf("%d requests, want 4", hits.Load())
	}
}

// MaxTime bounds the retries whatever Attempts allows.
func TestRetryMaxTime(t *testing.T) {
	t.Parallel()
	url, hits := counted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		http.Error(w, "broken", http.StatusBadGateway)
	})
	var err error
	within(t, 3*time.Second, func() error {
		_, err = get(fast(Retry{Attempts: 1000, Base: 100 * time.Millisecond, MaxTime: 500 * time.Millisecond}), t.Context(), url)
		return err
	})
	wantURL(t, err, url)
	if n := hits.Load(); n < 2 || n > 4 {
		t.Errorf("%d requests within 500ms of waits from 100ms doubling, want 2 to 4", n)
	}
}

// A 404 (or 403, 410, 501) is asked once: it does not pass.
func TestRetryNotOn4xx(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusNotFound, http.StatusForbidden, http.StatusGone, http.StatusNotImplemented} {
		url, hits := counted(t, func(n int64, w http.ResponseWriter, r *http.Request) { http.Error(w, "no", code) })
		_, err := get(fast(Retry{Base: 10 * time.Millisecond}), t.Context(), url)
		var se *StatusError
		var re *RetryError
		if !errors.As(err, &se) || se.Code != code || errors.As(err, &re) || hits.Load() != 1 {
			t.Errorf("%d: %v after %d requests, want the status after 1", code, err, hits.Load())
		}
	}
}

// 408 and 429 without Retry-After pass, like 5xx.
func TestRetryOn408And429(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusGatewayTimeout} {
		url, hits := counted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				http.Error(w, "again", code)
				return
			}
			io.WriteString(w, "ok")
		})
		if _, err := get(fast(Retry{Base: 10 * time.Millisecond}), t.Context(), url); err != nil || hits.Load() != 2 {
			t.Errorf("%d: %v after %d requests", code, err, hits.Load())
		}
	}
}

// A connection reset before the response is tried again.
func TestRetryConnectionReset(t *testing.T) {
	t.Parallel()
	url, hits := counted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			c, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			c.(*net.TCPConn).SetLinger(0) // RST, not FIN
			c.Close()
			return
		}
		io.WriteString(w, "ok")
	})
	body, err := get(fast(Retry{Base: 10 * time.Millisecond}), t.Context(), url)
	if err != nil || body != "ok" || hits.Load() != 2 {
		t.Fatalf("%q, %v after %d requests", body, err, hits.Load())
	}
}

// A host that refuses connections is not retried (mirrors are how a dead
// host is worked around), nor is a cancelled wait waited out.
func TestRetryNotOnRefusedOrCancelled(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/doc.xml"
	l.Close()
	var re *RetryError
	if _, err := get(fast(Retry{Base: 10 * time.Millisecond}), t.Context(), dead); err == nil || errors.As(err, &re) {
		t.Errorf("refused: %v, want one attempt's error", err)
	}

	url, hits := counted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
	})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err = within(t, 2*time.Second, func() error {
		_, err := get(fast(Retry{Base: 10 * time.Second}), ctx, url)
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) || hits.Load() != 1 {
		t.Errorf("%v after %d requests, want the context's deadline after 1", err, hits.Load())
	}
	wantURL(t, err, url)
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"": 0, "1": time.Second, " 120 ": 2 * time.Minute, "-5": 0, "x": 0, "999999999999": 24 * time.Hour,
		"Fri, 27 Nov 2026 08:00:30 GMT": 30 * time.Second, "Fri, 27 Nov 2026 07:00:00 GMT": 0,
	} {
		if got := ParseRetryAfter(v, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

// cutting serves doc with the fields set (ETag, Last-Modified;
// http.ServeContent honours Range and If-Range, unless ranges is false),
// but resets the connection of the first response after half of it.
func cutting(t *testing.T, doc string, fields map[string]string, ranges bool) (url string, hits *atomic.Int64, asked *atomic.Pointer[string]) {
	asked = new(atomic.Pointer[string])
	url, hits = counted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		for k, v := range fields {
			w.Header().Set(k, v)
		}
		if n == 1 {
			w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, doc[:len(doc)/2])
			w.(http.Flusher).Flush()
			c, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			return
		}
		rng := r.Header.Get("Range") + " If-Range: " + r.Header.Get("If-Range")
		asked.Store(&rng)
		if !ranges {
			r.Header.Del("Range")
		}
		http.ServeContent(w, r, "doc.xml", time.Time{}, strings.NewReader(doc))
	})
	return url, hits, asked
}

// A body reset half way is resumed where it broke, with Range and
// If-Range naming the version, and reads whole.
func TestRetryResumesBody(t *testing.T) {
	t.Parallel()
	doc := strings.Repeat("<url><loc>http://127.0.0.1/x</loc></url>\n", 4000)
	url, hits, asked := cutting(t, doc, map[string]string{"ETag": `"v1"`}, true)
	body, err := get(fast(Retry{Base: 10 * time.Millisecond}), t.Context(), url)
	if err != nil || body != doc || hits.Load() != 2 {
		t.Fatalf("%d bytes, %v after %d requests; want the %d bytes after 2", len(body), err, hits.Load(), len(doc))
	}
	if want := fmt.Sprintf("bytes=%d- If-Range: \"v1\"", len(doc)/2); *asked.Load() != want {
		t.Errorf("asked %q, want %q", *asked.Load(), want)
	}
}

// Without a version to resume, or from a server that answers the whole
// document again, the cut fails the read, naming the URL.
func TestRetryNoResume(t *testing.T) {
	t.Parallel()
	doc := strings.Repeat("<url/>\n", 20000)
	for _, c := range []struct {
		name   string
		fields map[string]string
		ranges bool
		hits   int64
	}{
		{"no validator", nil, true, 1},
		{"weak ETag", map[string]string{"ETag": `W/"v1"`}, true, 1},
		{"range ignored", map[string]string{"ETag": `"v1"`}, false, 2},
	} {
		url, hits, _ := cutting(t, doc, c.fields, c.ranges)
		body, err := get(fast(Retry{Base: 10 * time.Millisecond}), t.Context(), url)
		t.Logf("%s: %v", c.name, err)
		if err == nil || !strings.Contains(err.Error(), url) || hits.Load() != c.hits {
			t.Errorf("%s: %d bytes, %v after %d requests; want a failure naming the URL after %d", c.name, len(body), err, hits.Load(), c.hits)
		}
	}
}

// A range served from another version (a server or proxy that ignores
// If-Range) is never spliced onto the first part: the read fails, naming
// the URL. Nor is a Last-Modified a version when the response was sent
// within its second: the cut is not resumed.
func TestRetryResumeOnlySameVersion(t *testing.T) {
	t.Parallel()
	doc := strings.Repeat("<url/>\n", 20000)
	other := strings.Repeat("<URL/>\n", 20000)
	for _, c := range []struct {
		name   string
		fields map[string]string // of the first response
		later  map[string]string // of the responses after it
		hits   int64
	}{
		{"other ETag", map[string]string{"ETag": `"v1"`}, map[string]string{"ETag": `"v2"`}, 2},
		{"Last-Modified of the same second", map[string]string{"Last-Modified": "Mon, 02 Jan 2006 15:04:05 GMT", "Date": "Mon, 02 Jan 2006 15:04:05 GMT"}, nil, 1},
	} {
		url, hits := counted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				for k, v := range c.fields {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, doc[:len(doc)/2])
				w.(http.Flusher).Flush()
				conn, _, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
				return
			}
			for k, v := range c.later {
				w.Header().Set(k, v)
			}
			r.Header.Del("If-Range") // the range of whatever is there now
			http.ServeContent(w, r, "doc.xml", time.Time{}, strings.NewReader(other))
		})
		body, err := get(fast(Retry{Base: 10 * time.Millisecond}), t.Context(), url)
		t.Logf("%s: %v", c.name, err)
		if err == nil || !strings.Contains(err.Error(), url) || hits.Load() != c.hits || strings.Contains(body, "<URL/>") {
			t.Errorf("%s: %d bytes (%t spliced), %v after %d requests; want a failure naming the URL after %d", c.name, len(body), strings.Contains(body, "<URL/>"), err, hits.Load(), c.hits)
		}
	}
}
