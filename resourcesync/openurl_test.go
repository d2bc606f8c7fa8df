package resourcesync

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLoadURL: with no Open, a Loader reads a URL through rsdump's HTTP
// client (its User-Agent names rsdump), following an index's parts, and a
// 404 is an OpenError naming the URL.
func TestLoadURL(t *testing.T) {
	t.Parallel()
	const head = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"
	const ns = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`
	docs := map[string]string{}
	agents := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agents <- r.UserAgent()
		d, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(d))
	}))
	defer srv.Close()
	docs["/index.xml"] = head + `<sitemapindex ` + ns + `><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>` +
		`<sitemap><loc>` + srv.URL + `/part.xml</loc></sitemap></sitemapindex>`
	docs["/part.xml"] = head + `<urlset ` + ns + `><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>` +
		`<url><loc>http://127.0.0.1/a</loc></url><url><loc>http://127.0.0.1/b</loc></url></urlset>`
	var locs []string
	l := Loader{Entry: func(d *Document, _ int, u URL) error {
		if d.Header.Kind == URLSet {
			locs = append(locs, u.Loc)
		}
		return nil
	}}
	if err := l.Load(t.Context(), srv.URL+"/index.xml"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(locs, " ") != "http://127.0.0.1/a http://127.0.0.1/b" {
		t.Errorf("entries %v", locs)
	}
	for range 2 {
		if ua := <-agents; !strings.HasPrefix(ua, "rsdump/") {
			t.Errorf("User-Agent %q", ua)
		}
	}
	err := l.Load(t.Context(), srv.URL+"/gone.xml")
	var oe *OpenError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), srv.URL+"/gone.xml") || !strings.Contains(err.Error(), "404") {
		t.Errorf("%v, want an OpenError naming the URL and the status", err)
	}
}

// TestLoadIndexPartsBounded: an index listing more parts than MaxParts
// (a Change List Index a server keeps growing) stops the load after
// MaxParts parts with ErrTooManyParts naming the index; the default
// bound is MaxEntries.
func TestLoadIndexPartsBounded(t *testing.T) {
	t.Parallel()
	const head = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"
	const ns = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`
	var parts atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/index.xml" {
			var b strings.Builder
			b.WriteString(head + `<sitemapindex ` + ns + `><rs:md capability="changelist"/>`)
			for i := range 40 {
				fmt.Fprintf(&b, "<sitemap><loc>%s/part/%d.xml</loc></sitemap>", srv.URL, i)
			}
			w.Write([]byte(b.String() + `</sitemapindex>`))
			return
		}
		parts.Add(1)
		w.Write([]byte(head + `<urlset ` + ns + `><rs:md capability="changelist"/></urlset>`))
	}))
	defer srv.Close()
	l := Loader{MaxParts: 15}
	err := l.Load(t.Context(), srv.URL+"/index.xml")
	if !errors.Is(err, ErrTooManyParts) || !strings.Contains(err.Error(), srv.URL+"/index.xml") || parts.Load() != 15 {
		t.Errorf("%d parts read: %v, want 15 and ErrTooManyParts naming the index", parts.Load(), err)
	}
	parts.Store(0)
	if err := (&Loader{}).Load(t.Context(), srv.URL+"/index.xml"); err != nil || parts.Load() != 40 {
		t.Errorf("default bound: %d parts, %v", parts.Load(), err)
	}
}
