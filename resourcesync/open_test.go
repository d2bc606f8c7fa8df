package resourcesync

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/httpc/httpctest"
	"github.com/rsdump/rsdump/internal/s3test"
	"github.com/rsdump/rsdump/s3"
)

const openDoc = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="resourcedumpmanifest" at="2026-01-01T00:00:00Z"/><url><loc>http://127.0.0.1/a</loc></url></urlset>`

// entries loads loc through open and returns its entries' <loc>s.
func entries(t *testing.T, open OpenFunc, loc string) ([]string, error) {
	var locs []string
	l := Loader{Open: open, Entry: func(_ *Document, _ int, u URL) error { locs = append(locs, u.Loc); return nil }}
	err := l.Load(t.Context(), loc)
	return locs, err
}

// A manifest that answers 503 once, then 200, is read: the Loader's
// default opener retries it (before the one opener, the 503 failed the
// load). A 404 is asked once; a 500 on every request gives up after the
// client's bound, naming the URL and the attempts.
func TestOpenerRetries(t *testing.T) {
	t.Parallel()
	doc := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gone.xml":
			http.NotFound(w, r)
		case "/broken.xml":
			http.Error(w, "broken", http.StatusInternalServerError)
		default:
			io.WriteString(w, openDoc)
		}
	})
	var hits atomic.Int64
	f := httpctest.FailingFirst(doc, http.StatusServiceUnavailable, 1, func(p string) bool { return p == "/manifest.xml" })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); f.ServeHTTP(w, r) }))
	defer srv.Close()

	if locs, err := entries(t, nil, srv.URL+"/manifest.xml"); err != nil || len(locs) != 1 || hits.Load() != 2 {
		t.Fatalf("%v, %v after %d requests; want the entry after 2", err, locs, hits.Load())
	}

	o := Opener{Client: httpc.New(httpc.Options{Retry: httpc.Retry{Attempts: 3, Base: 20 * time.Millisecond}})}
	hits.Store(0)
	_, err := entries(t, o.Open, srv.URL+"/gone.xml")
	if err == nil || !strings.Contains(err.Error(), srv.URL+"/gone.xml") || hits.Load() != 1 {
		t.Errorf("404: %v after %d requests, want one request", err, hits.Load())
	}

	hits.Store(0)
	start := time.Now()
	_, err = entries(t, o.Open, srv.URL+"/broken.xml")
	var oe *OpenError
	var re *httpc.RetryError
	if !errors.As(err, &oe) || !errors.As(err, &re) || hits.Load() != 3 ||
		!strings.Contains(err.Error(), srv.URL+"/broken.xml") || !strings.Contains(err.Error(), "3 attempts") {
		t.Errorf("500: %v after %d requests, want an OpenError naming the URL and 3 attempts", err, hits.Load())
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gave up after %v, want 20+40 ms of waits", d)
	}
}

// A local path and an s3:// location go through the same opener: the
// file is read as it is; the object, behind a front that answers 503 to
// its first GET, is read on the second, only under the user's grant
// (without it, nothing is asked of the server).
func TestOpenerLocalAndS3(t *testing.T) {
	local := filepath.Join(t.TempDir(), "manifest.xml")
	if err := os.WriteFile(local, []byte(openDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	if locs, err := entries(t, Opener{}.Open, local); err != nil || len(locs) != 1 {
		t.Fatalf("local: %v, %v", locs, err)
	}
	if _, err := entries(t, Opener{}.Open, filepath.Dir(local)); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v, want not a regular file", err)
	}
	if _, err := entries(t, Opener{MaxBytes: 100}.Open, local); !errors.Is(err, httpc.ErrTooLarge) {
		t.Errorf("a file past MaxBytes: %v, want ErrTooLarge", err)
	}

	srv := s3test.Start(t)
	bucket := srv.Bucket(t, "docs")
	srv.Put(t, bucket, "rs/manifest.xml", []byte(openDoc))
	target, _ := url.Parse(srv.Endpoint)
	var hits atomic.Int64
	f := httpctest.FailingFirst(httputil.NewSingleHostReverseProxy(target), http.StatusServiceUnavailable, 1,
		func(p string) bool { return p == "/docs/rs/manifest.xml" })
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); f.ServeHTTP(w, r) }))
	defer front.Close()
	ctx := s3.WithConfig(t.Context(), s3.Config{Endpoint: front.URL})

	const loc = "s3://docs/rs/manifest.xml"
	l := Loader{}
	if err := l.Load(ctx, loc); !errors.Is(err, s3.ErrNotGranted) || hits.Load() != 0 {
		t.Errorf("without the grant: %v after %d requests, want ErrNotGranted and none", err, hits.Load())
	}
	var locs []string
	l.Entry = func(_ *Document, _ int, u URL) error { locs = append(locs, u.Loc); return nil }
	if err := l.Load(s3.Grant(ctx, loc), loc); err != nil || len(locs) != 1 || hits.Load() != 2 {
		t.Errorf("granted: %v, %v after %d requests; want the entry after 2", err, locs, hits.Load())
	}
}
