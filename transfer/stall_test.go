package transfer

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/httpc/httpctest"
)

// TestUnansweredMirror: a file whose only mirror never answers, or stalls
// in the body, fails within a few stall timeouts, naming the URL.
func TestUnansweredMirror(t *testing.T) {
	t.Parallel()
	data := payload(256<<10, 7)
	for name, base := range httpctest.UnansweringData(t, data, 1000) {
		u := base + "/f.bin"
		o := fastOptions()
		o.MaxFailures = 1
		start := time.Now()
		_, err := get(t, o, t.TempDir(), fileFor("f.bin", data, plen, u))
		if el := time.Since(start); el > 4*time.Second {
			t.Errorf("%s: took %s", name, el)
		}
		if err == nil || !strings.Contains(err.Error(), u) {
			t.Errorf("%s: error %v does not name %s", name, err, u)
		}
	}
}

// TestUnansweredSource: a document URL, or a plain URL whose probe gets
// no answer, on such a server fails Resolve within the stall timeout,
// naming the URL. (The stalling server answers a probe for byte 0.)
func TestUnansweredSource(t *testing.T) {
	t.Parallel()
	data := []byte(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
` + strings.Repeat("<!-- padding -->\n", 1000))
	for name, base := range httpctest.UnansweringData(t, data, 1000) {
		urls := []string{base + "/resourcedump.xml", base + "/f.meta4"}
		if name == "silent" {
			urls = append(urls, base+"/f.bin")
		}
		for _, u := range urls {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			start := time.Now()
			_, err := New(fastOptions()).Resolve(ctx, u)
			cancel()
			if el := time.Since(start); el > 3*time.Second {
				t.Errorf("%s %s: took %s", name, u, el)
			}
			if err == nil || !strings.Contains(err.Error(), u) || name == "stalled" && !strings.Contains(err.Error(), "stalled") {
				t.Errorf("%s: error %v does not name %s, or the stall", name, err, u)
			}
		}
	}
}

// TestUserAgent: every request the engine sends names rsdump.
func TestUserAgent(t *testing.T) {
	t.Parallel()
	data := payload(200<<10, 3)
	agents := make(chan string, 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agents <- r.UserAgent()
		http.ServeContent(w, r, "f.bin", time.Time{}, strings.NewReader(string(data)))
	}))
	defer srv.Close()
	if _, err := get(t, fastOptions(), t.TempDir(), fileFor("f.bin", data, plen, srv.URL+"/f.bin")); err != nil {
		t.Fatal(err)
	}
	close(agents)
	n := 0
	for ua := range agents {
		n++
		if !strings.HasPrefix(ua, "rsdump/") {
			t.Errorf("User-Agent %q", ua)
		}
	}
	if n == 0 {
		t.Error("no request")
	}
}

// TestProbeRedirectScheme: the probe, which follows redirects itself,
// refuses one to a scheme other than http or https, naming both URLs.
func TestProbeRedirectScheme(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.RedirectHandler("ftp://127.0.0.1/f.bin", http.StatusFound))
	defer srv.Close()
	_, err := New(fastOptions()).Resolve(t.Context(), srv.URL+"/f.bin")
	if !errors.Is(err, httpc.ErrScheme) || !strings.Contains(err.Error(), srv.URL+"/f.bin") || !strings.Contains(err.Error(), "ftp://127.0.0.1/f.bin") {
		t.Errorf("%v, want httpc.ErrScheme naming both URLs", err)
	}
}

// TestSilentMirrorDroppedAtOnce: a mirror that accepts and never answers
// is not retried MaxFailures times: with the default retries, a file whose
// only mirror it is fails within about one stall timeout.
func TestSilentMirrorDroppedAtOnce(t *testing.T) {
	t.Parallel()
	data := payload(256<<10, 7)
	u := httpctest.Silent(t) + "/f.bin"
	o := fastOptions()
	o.MaxFailures = 0 // the default, 8
	o.StallTimeout = 300 * time.Millisecond
	start := time.Now()
	_, err := get(t, o, t.TempDir(), fileFor("f.bin", data, plen, u))
	if el := time.Since(start); el > 6*o.StallTimeout {
		t.Errorf("took %s, want about one stall timeout (%s)", el, o.StallTimeout)
	}
	if err == nil || !strings.Contains(err.Error(), u) || !strings.Contains(err.Error(), "no answer") {
		t.Errorf("error %v, want one naming %s and saying it never answered", err, u)
	}
}
