package pkgread_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/s3"
)

// LoadDump reads a package and its detached manifest where
// resourcesync.Resolve says: a dump read over HTTP that names either by
// something other than an absolute http(s) URL, or by an s3:// URL the
// user did not grant, is rejected, naming the document, the entry and the
// reference; a local copy whose <loc> has no file name at its end is too.
func TestLoadDumpRefs(t *testing.T) {
	t.Parallel()
	const head = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcedump" at="2026-01-01T00:00:00Z"/>`
	entry := func(loc, links string) string {
		return head + `<url><loc>` + loc + `</loc><rs:md length="1" type="application/zip"/>` + links + `</url></urlset>`
	}
	docs := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, ok := docs[r.URL.Path]; ok {
			w.Write([]byte(d))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	docs["/s3.xml"] = entry("s3://private/p.zip", "")
	docs["/contents.xml"] = entry(srv.URL+"/p.zip", `<rs:ln rel="contents" href="p.manifest.xml" type="application/xml"/>`)
	docs["/s3contents.xml"] = entry(srv.URL+"/p.zip", `<rs:ln rel="contents" href="s3://private/p.manifest.xml" type="application/xml"/>`)
	dir := t.TempDir()
	verifytest.WriteFiles(t, dir, map[string]string{"resourcedump.xml": entry("http://127.0.0.1/rs/..", "")})
	local := filepath.Join(dir, "resourcedump.xml")
	ctx := context.Background()
	for _, c := range []struct{ doc, ref string }{
		{srv.URL + "/s3.xml", "s3://private/p.zip"},
		{srv.URL + "/contents.xml", "p.manifest.xml"},
		{srv.URL + "/s3contents.xml", "s3://private/p.manifest.xml"},
		{local, "http://127.0.0.1/rs/.."},
	} {
		var fs []finding.Finding
		_, err := pkgread.LoadDump(ctx, nil, c.doc, finding.NewReporter(finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })))
		if !errors.Is(err, pkgread.ErrRejected) || len(fs) == 0 {
			t.Errorf("%s: %v, want it rejected", c.doc, err)
			continue
		}
		if f := fs[len(fs)-1]; f.Source != c.doc || !strings.Contains(f.Msg, "entry 1") || !strings.Contains(f.Msg, `"`+c.ref+`"`) {
			t.Errorf("%s: %+v, want the document, entry 1 and %q named", c.doc, f, c.ref)
		}
	}
	d, err := pkgread.LoadDump(s3.Grant(ctx, "s3://private/"), nil, srv.URL+"/s3.xml", finding.NewReporter(nil))
	if err != nil || d.Packages[0].Loc != "s3://private/p.zip" {
		t.Errorf("under the grant: %+v, %v", d, err)
	}
}
