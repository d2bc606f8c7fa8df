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

	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/s3"
)

// A remote document's mirrors and Metalink urls go through
// resourcesync.Ref: s3:// only under the user's grant, nothing that is not
// an absolute URL; a scheme rsdump does not read (ftp) is left out, as
// before. A local Metalink's urls are the user's, taken as they are.
func TestMirrorRefs(t *testing.T) {
	t.Parallel()
	data := payload(10<<10, 60)
	var mu sync.Mutex
	var asked []string
	docs := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		if d, ok := docs[r.URL.Path]; ok {
			w.Write(d)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	entry := func(links string) []byte {
		return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcedump" at="2026-01-01T00:00:00Z"/>
<url><loc>` + srv.URL + `/p.zip</loc><rs:md hash="sha-256:` + sha(data) + `" length="` + fmt.Sprint(len(data)) + `" type="application/zip"/>` + links + `</url></urlset>`)
	}
	docs["/dup.xml"] = entry(`<rs:ln rel="duplicate" href="s3://private/p.zip"/>`)
	docs["/rel.xml"] = entry(`<rs:ln rel="duplicate" href="p2.zip"/>`)
	docs["/ftp.xml"] = entry(`<rs:ln rel="duplicate" href="ftp://127.0.0.1/p.zip"/>`)
	docs["/ml.xml"] = entry(`<rs:ln rel="describedby" type="application/metalink4+xml" href="` + srv.URL + `/p.meta4"/>`)
	docs["/p.meta4"] = metalinkDoc(t, data, "p.zip", "s3://private/p.zip")
	docs["/bad.xml"] = entry(`<rs:ln rel="describedby" type="application/metalink4+xml" href="%zz.meta4"/>`)
	g := New(fastOptions())
	ctx := context.Background()
	for _, c := range []struct{ doc, ref string }{
		{"/dup.xml", "s3://private/p.zip"},
		{"/rel.xml", "p2.zip"},
		{"/ml.xml", "s3://private/p.zip"},
		{"/bad.xml", "%zz.meta4"},
	} {
		_, err := g.Resolve(ctx, srv.URL+c.doc)
		var re *resourcesync.RefError
		if !errors.As(err, &re) || re.Ref != c.ref || !strings.HasPrefix(re.Doc, srv.URL) || strings.Count(err.Error(), re.Doc) != 1 {
			t.Errorf("%s: %v, want a RefError naming %q once", c.doc, err, c.ref)
		}
	}
	files, err := g.Resolve(ctx, srv.URL+"/ftp.xml")
	if err != nil || len(files) != 1 || len(files[0].Mirrors) != 1 {
		t.Errorf("an ftp mirror: %+v, %v; want it left out", files, err)
	}
	files, err = g.Resolve(s3.Grant(ctx, "s3://private/"), srv.URL+"/dup.xml")
	if err != nil || len(files) != 1 || len(files[0].Mirrors) != 2 {
		t.Errorf("an s3:// mirror under the grant: %+v, %v", files, err)
	}
	local := filepath.Join(t.TempDir(), "p.meta4")
	os.WriteFile(local, docs["/p.meta4"], 0o644)
	files, err = g.Resolve(ctx, local)
	if err != nil || len(files) != 1 || len(files[0].Mirrors) != 1 || files[0].Mirrors[0].URL != "s3://private/p.zip" {
		t.Errorf("a local Metalink: %+v, %v", files, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range asked {
		if !strings.HasSuffix(p, ".xml") && p != "/p.meta4" {
			t.Errorf("asked for %s", p)
		}
	}
}
