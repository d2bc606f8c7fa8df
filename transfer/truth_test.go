package transfer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	mt "github.com/rsdump/rsdump/internal/mirrortest"
)

// zipLike is package-shaped content: a ZIP local file header signature,
// then random bytes.
func zipLike(n int, seed uint64) []byte {
	b := payload(n, seed)
	copy(b, "PK\x03\x04")
	return b
}

// dumpDoc is a Resource Dump listing one package.
func dumpDoc(loc string, data []byte) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcedump" at="2026-01-01T00:00:00Z"/>
<url><loc>` + loc + `</loc><rs:md hash="sha-256:` + sha(data) + `" length="` + fmt.Sprint(len(data)) + `" type="application/zip"/></url>
</urlset>
`
}

// TestResolveRefuses: a source that answers an HTML page (by its
// Content-Type or by its first bytes), a Capability List, or anything
// that is neither a dump document, a Metalink nor a ZIP package is
// refused before anything is fetched for it, naming the URL and what it
// answered. What is one is taken whatever its URL looks like: a dump
// document at a path without ".xml", a ZIP that its server calls HTML.
func TestResolveRefuses(t *testing.T) {
	t.Parallel()
	page := `<!DOCTYPE html><html><head><title>x</title><link rel="resourcesync" href="capabilitylist.xml"></head><body>hello</body></html>`
	pkg := zipLike(100<<10, 70)
	mux := http.NewServeMux()
	var base string
	answer := func(path, ctype, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			http.ServeContent(w, r, "", time.Time{}, strings.NewReader(body))
		})
	}
	answer("/", "text/html; charset=utf-8", page)
	answer("/doc.xml", "text/html", page)
	answer("/sniffed.zip", "application/octet-stream", "\n\n  "+page)
	answer("/notes.txt", "text/plain; charset=utf-8", "hello\n")
	answer("/capabilitylist.xml", "application/xml", `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="capabilitylist"/>
<url><loc>resourcedump.xml</loc><rs:md capability="resourcedump"/></url>
</urlset>`)
	answer("/pkg", "text/html", string(pkg))
	mux.HandleFunc("/dump", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, dumpDoc(base+"/pkg", pkg))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	base = srv.URL
	for path, what := range map[string]string{
		"/":                   "an HTML page",
		"/doc.xml":            "an HTML page",
		"/sniffed.zip":        "an HTML page",
		"/notes.txt":          "text/plain",
		"/capabilitylist.xml": "a Capability List",
	} {
		u := srv.URL + path
		files, err := New(fastOptions()).Resolve(t.Context(), u)
		if !errors.Is(err, ErrNotGettable) || !strings.Contains(err.Error(), u+": ") || !strings.Contains(err.Error(), what) {
			t.Errorf("%s: %d files, error %v; want ErrNotGettable naming it and %q", path, len(files), err, what)
		}
	}
	g := New(fastOptions())
	for _, path := range []string{"/dump", "/pkg"} {
		files, err := g.Resolve(t.Context(), srv.URL+path)
		if err != nil || len(files) != 1 || files[0].Size != int64(len(pkg)) {
			t.Errorf("%s: %+v, %v; want the package", path, files, err)
		}
	}
	dir := t.TempDir()
	saved, err := g.SaveDocuments(t.Context(), dir, srv.URL+"/dump")
	if err != nil || len(saved) != 1 || filepath.Base(saved[0]) != "dump" {
		t.Errorf("saved %v, %v; want the dump document, as dump", saved, err)
	}
}

// TestSaveDocumentsHostGone: a dump document Resolve read, whose host is
// gone when its documents are saved, is an error naming it, never a
// source that merely saves nothing; nothing is left in the directory.
func TestSaveDocumentsHostGone(t *testing.T) {
	t.Parallel()
	pkg := zipLike(10<<10, 71)
	var doc string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, doc)
	}))
	doc = dumpDoc(srv.URL+"/p.zip", pkg)
	u := srv.URL + "/resourcedump.xml"
	g := New(fastOptions())
	if _, err := g.Resolve(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	dir := t.TempDir()
	saved, err := g.SaveDocuments(t.Context(), dir, u)
	if err == nil || !strings.Contains(err.Error(), u) {
		t.Errorf("saved %v, error %v; want one naming %s", saved, err, u)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d files left in the directory", len(entries))
	}
}

// TestProgressTotalAtStart: the bytes Get plans (finding.Planned) are
// every file's, all of them before any progress, and the progress adds up
// to them, however few files are fetched at a time. (The total used to
// grow as each file started, so the share done fell each time one did.)
func TestProgressTotalAtStart(t *testing.T) {
	t.Parallel()
	var files []File
	var want int64
	for i := range 4 {
		data := payload(256<<10, uint64(80+i))
		s, _ := serve(t, data, mt.RateLimit(4<<20))
		files = append(files, fileFor(fmt.Sprintf("f%d.bin", i), data, plen, s.URL))
		want += int64(len(data))
	}
	o := fastOptions()
	o.Files = 1
	var mu sync.Mutex
	var problems []string
	var planned, done int64
	var steps int
	o.Events = func(e finding.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e := e.(type) {
		case finding.Planned:
			planned += e.Bytes
			if done > 0 {
				problems = append(problems, fmt.Sprintf("%d bytes planned after %d done", e.Bytes, done))
			}
		case finding.Progress:
			steps++
			done += e.Bytes
			if planned != want || done > want {
				problems = append(problems, fmt.Sprintf("%d done of %d planned", done, planned))
			}
		}
	}
	g := New(o)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := g.Get(ctx, t.TempDir(), files); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if steps < 10 {
		t.Fatalf("only %d progress events during the transfer", steps)
	}
	if planned != want || done != want {
		t.Errorf("planned %d, done %d, want %d", planned, done, want)
	}
	if len(problems) > 0 {
		t.Errorf("total %d; %d of %d events went wrong, the first: %s", want, len(problems), steps, problems[0])
	}
}
