package resourcesync

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rsdump/rsdump/s3"
)

// Resolve: a remote document's links are absolute URLs; a local document's
// and an S3 object's name the file beside it, whatever URL the Source
// publishes under.
func TestResolve(t *testing.T) {
	t.Parallel()
	granted := s3.Grant(t.Context(), "s3://dumps/")
	for _, c := range []struct{ doc, loc, want string }{
		{"http://127.0.0.1/rs/resourcedump.xml", "http://127.0.0.1:8/x/part1.zip", "http://127.0.0.1:8/x/part1.zip"},
		{"http://127.0.0.1/rs/resourcedump.xml", "HTTPS://127.0.0.1/x/part1.zip", "https://127.0.0.1/x/part1.zip"},
		{"http://127.0.0.1/rs/resourcedump.xml", "s3://dumps/rs/part1.zip", "s3://dumps/rs/part1.zip"},
		{"s3://dumps/rs/resourcedump.xml", "https://127.0.0.1/pub/part%201.zip", "s3://dumps/rs/part%201.zip"},
		{"s3://dumps/resourcedump.xml", "https://127.0.0.1/pub/part1.zip", "s3://dumps/part1.zip"},
		{filepath.Join("out", "resourcedump.xml"), "https://127.0.0.1/pub/part1.zip", filepath.Join("out", "part1.zip")},
		{filepath.Join("out", "resourcedump.xml"), "%zz", filepath.Join("out", "%zz")},
	} {
		if got, err := Resolve(granted, c.doc, c.loc); got != c.want || err != nil {
			t.Errorf("Resolve(%q, %q) = %q, %v; want %q", c.doc, c.loc, got, err, c.want)
		}
	}
	// One rule for the command line and the library: the scheme, in any
	// case, and a colon. "s3:/x" and "http:/h" are meant as URLs and fail
	// as URLs (s3.Split, the HTTP client), never as files of those names.
	for s, want := range map[string]bool{"s3://b1b/k": true, "http://h/": true, "https://h/": true, "/tmp/x": false,
		"s3:/x": true, "http:/h": true, "HTTPS://h/": true, "S3://b/k": true, "http": false, "./http:/h": false,
		"s3": false, "ftp://h/": false, "httpx://h/": false, "": false} {
		if IsURL(s) != want {
			t.Errorf("IsURL(%q) = %v", s, !want)
		}
	}
}

// A document read from a URL names only absolute http(s) URLs, and s3://
// ones under a grant: anything else is refused, naming the document and
// the reference, and never becomes a local path.
func TestResolveRefuses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const doc = "http://127.0.0.1/rs/resourcedump.xml"
	for _, c := range []struct {
		ctx      context.Context
		doc, ref string
		want     error
	}{
		{ctx, doc, "s3://private/key", s3.ErrNotGranted},
		{ctx, doc, "S3://private/key", s3.ErrNotGranted},
		{ctx, doc, "resourcedump-00001.zip", ErrNotAbsolute},
		{ctx, doc, "../x.zip", ErrNotAbsolute},
		{ctx, doc, "/tmp/x.zip", ErrNotAbsolute},
		{ctx, doc, "//127.0.0.1/x.zip", ErrNotAbsolute},
		{ctx, doc, "%zz", ErrNotAbsolute},
		{ctx, doc, "p\tq.zip", ErrNotAbsolute},
		{ctx, doc, "http:x.zip", ErrNotAbsolute},
		{ctx, doc, "file:///etc/passwd", ErrScheme},
		{ctx, doc, "ftp://127.0.0.1/x.zip", ErrScheme},
		{s3.Grant(ctx, "s3://b1b/"), doc, "s3://b1b/a/../k", s3.ErrBadURL},
		{ctx, "s3://dumps/rs/resourcedump.xml", "part1.zip", ErrNotAbsolute},
		{ctx, "s3://dumps/rs/resourcedump.xml", "http://127.0.0.1/x/..", nil}, // no name at its end
		{ctx, "out/resourcedump.xml", "http://127.0.0.1/", nil},
		{ctx, "out/resourcedump.xml", "http://127.0.0.1/a/..", nil},
	} {
		got, err := Resolve(c.ctx, c.doc, c.ref)
		var re *RefError
		if !errors.As(err, &re) || c.want != nil && !errors.Is(err, c.want) || got != "" ||
			!strings.HasPrefix(err.Error(), c.doc+": ") || !strings.Contains(err.Error(), strconv.Quote(c.ref)) {
			t.Errorf("Resolve(%q, %q) = %q, %v; want a RefError naming both, wrapping %v", c.doc, c.ref, got, err, c.want)
		}
	}
	// A local document's references are the user's: taken as they are.
	if got, err := Ref(ctx, "out/resourcedump.xml", "%zz"); got != "%zz" || err != nil {
		t.Errorf("Ref of a local document: %q, %v", got, err)
	}
}

// Beside names a document next to another, as one safe segment.
func TestBeside(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ doc, want string }{
		{"http://127.0.0.1/rs/changedump.xml", "http://127.0.0.1/rs/resourcedump.xml"},
		{"s3://dumps/rs/changedump.xml", "s3://dumps/rs/resourcedump.xml"},
		{filepath.Join("out", "changedump.xml"), filepath.Join("out", "resourcedump.xml")},
	} {
		if got, err := Beside(c.doc, "resourcedump.xml"); got != c.want || err != nil {
			t.Errorf("Beside(%q) = %q, %v", c.doc, got, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "/", "a/b", `a\b`} {
		if _, err := Beside("http://127.0.0.1/rs/x.xml", bad); err == nil {
			t.Errorf("Beside(%q): no error", bad)
		}
	}
}

// An index read over HTTP whose part is not an absolute URL, or is in S3,
// is an error naming the index and the part; nothing is asked for it.
func TestLoadRefusesParts(t *testing.T) {
	t.Parallel()
	const head = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"
	const ns = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`
	var asked atomic.Int32
	var index string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/index.xml" {
			asked.Add(1)
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(index))
	}))
	defer srv.Close()
	for _, part := range []string{"part.xml", "%zz", "s3://private/part.xml", "file:///etc/passwd"} {
		index = head + `<sitemapindex ` + ns + `><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>` +
			`<sitemap><loc>` + part + `</loc></sitemap></sitemapindex>`
		called := false
		l := Loader{PartFailed: func(*Document, int, URL, error) error { called = true; return nil }}
		err := l.Load(t.Context(), srv.URL+"/index.xml")
		var re *RefError
		if !errors.As(err, &re) || re.Doc != srv.URL+"/index.xml" || re.Ref != part || called {
			t.Errorf("part %q: %v (PartFailed called: %v)", part, err, called)
		}
	}
	if asked.Load() != 0 {
		t.Errorf("%d parts asked for", asked.Load())
	}
}
