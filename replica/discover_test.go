package replica_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/s3"
)

// TestDiscoveryRoutes finds the same Source through every route of §6.3,
// and each sync from it ends with the same tree.
func TestDiscoveryRoutes(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(6, 300))
	s.packDump(pack.Options{CapabilityList: "http://127.0.0.1:1/unused"})
	s.publishResources()
	html := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>x</title>
<link rel="stylesheet" href="/s.css"><link rel="resourcesync" href="capabilitylist.xml"></head><body><p>hello<br></body></html>`
	write(t, filepath.Join(s.out, "page.html"), []byte(html))
	s.handler = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/linked" {
				w.Header().Set("Link", `<`+s.srv.URL+`/capabilitylist.xml>; rel="resourcesync"`)
				w.Write([]byte("any content"))
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	cl := s.srv.URL + "/capabilitylist.xml"
	for _, tc := range []struct {
		name, loc string
		route     []string
		docs      []string // capabilities found
	}{
		{"base URL", s.srv.URL, []string{"well-known", "capability list"}, []string{"resourcedump", "resourcelist"}},
		{"base URL with slash", s.srv.URL + "/", []string{"well-known", "capability list"}, []string{"resourcedump", "resourcelist"}},
		{"source description", s.srv.URL + "/.well-known/resourcesync", []string{"given", "capability list"}, []string{"resourcedump", "resourcelist"}},
		{"capability list", cl, []string{"given"}, []string{"resourcedump", "resourcelist"}},
		{"html link", s.srv.URL + "/page.html", []string{"given", "html link"}, []string{"resourcedump", "resourcelist"}},
		{"http link header", s.srv.URL + "/linked", []string{"given", "link header"}, []string{"resourcedump", "resourcelist"}},
		{"dump document", s.srv.URL + "/" + layout.DumpName, []string{"given"}, []string{"resourcedump"}},
		{"resource list", s.srv.URL + "/resourcelist.xml", []string{"given"}, []string{"resourcelist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := replica.Discover(context.Background(), nil, location(t, tc.loc))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(src.Route, tc.route) {
				t.Errorf("route %q, want %q", src.Route, tc.route)
			}
			for _, c := range tc.docs {
				if src.Docs[c] == "" {
					t.Errorf("no %s found: %v", c, src.Docs)
				}
			}
			if len(src.Docs) != len(tc.docs) {
				t.Errorf("found %v, want only %v", src.Docs, tc.docs)
			}
			dst := t.TempDir()
			res, fs, _ := syncRun(t, tc.loc, dst, replica.Options{})
			if res.Problems() != 0 {
				t.Fatalf("%+v\n%s", res, problems(fs))
			}
			sameTree(t, dst, s.files)
		})
	}
}

// TestDiscoveryUp: a dump document given directly whose rel="up" link
// names the Capability List brings the Source's other documents.
func TestDiscoveryUp(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(3, 50))
	s.packDump(pack.Options{CapabilityList: ""})
	s.publishResources()
	// pack links the Capability List when told where it will be.
	s.packDump(pack.Options{CapabilityList: s.srv.URL + "/capabilitylist.xml"})
	src, err := replica.Discover(context.Background(), nil, location(t, s.srv.URL+"/"+layout.DumpName))
	if err != nil {
		t.Fatal(err)
	}
	if src.Docs[resourcesync.CapResourceList] == "" || src.CapabilityList == "" {
		t.Errorf("rel=up not followed: %+v", src)
	}
}

// TestDiscoveryNothing: a server with no ResourceSync document anywhere
// is an error naming the address, not a hang or an empty sync.
func TestDiscoveryNothing(t *testing.T) {
	t.Parallel()
	s := newSource(t, nil)
	write(t, filepath.Join(s.out, "index.html"), []byte("<html><head><title>no</title></head><body>nothing</body></html>"))
	_, err := replica.Discover(context.Background(), nil, location(t, s.srv.URL+"/"))
	if !errors.Is(err, replica.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	os.Remove(filepath.Join(s.out, "index.html"))
	_, err = replica.Discover(context.Background(), nil, location(t, s.srv.URL+"/missing.xml"))
	if !errors.Is(err, replica.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

// TestDiscoveryRefuses: a document read over HTTP that names a Capability
// List or a capability document by something that is not an absolute
// http(s) URL, or by an s3:// URL the user did not grant, refuses the
// Source, naming the document and the reference; an HTML page's relative
// link still resolves against the page.
func TestDiscoveryRefuses(t *testing.T) {
	t.Parallel()
	const head = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">`
	doc := func(md, urls string) []byte { return []byte(head + md + urls + "</urlset>") }
	docs := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, ok := docs[r.URL.Path]; ok {
			w.Write(d)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	docs["/sd.xml"] = doc(`<rs:md capability="description"/>`, `<url><loc>capabilitylist.xml</loc><rs:md capability="capabilitylist"/></url>`)
	docs["/cl.xml"] = doc(`<rs:md capability="capabilitylist"/>`, `<url><loc>s3://private/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>`)
	docs["/rl.xml"] = doc(`<rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/><rs:ln rel="up" href="s3://private/cl.xml"/>`, "")
	docs["/bad.html"] = []byte(`<html><head><link rel="resourcesync" href="%zz"></head></html>`)
	docs["/s3.html"] = []byte(`<html><head><link rel="resourcesync" href="s3://private/cl.xml"></head></html>`)
	docs["/ok.html"] = []byte(`<html><head><link rel="resourcesync" href="cl.xml"></head></html>`)
	ctx := context.Background()
	for _, c := range []struct{ doc, ref string }{
		{"/sd.xml", "capabilitylist.xml"},
		{"/cl.xml", "s3://private/resourcelist.xml"},
		{"/rl.xml", "s3://private/cl.xml"},
		{"/bad.html", "%zz"},
		{"/s3.html", "s3://private/cl.xml"},
	} {
		_, err := replica.Discover(ctx, nil, location(t, srv.URL+c.doc))
		var re *resourcesync.RefError
		if !errors.As(err, &re) || re.Doc != srv.URL+c.doc || re.Ref != c.ref {
			t.Errorf("%s: %v, want a RefError naming it and %q", c.doc, err, c.ref)
		}
	}
	if src, err := replica.Discover(s3.Grant(ctx, "s3://private/"), nil, location(t, srv.URL+"/ok.html")); err != nil || src.Docs["resourcelist"] != "s3://private/resourcelist.xml" {
		t.Errorf("an HTML page's relative link to a Capability List naming s3:// under the grant: %+v, %v", src, err)
	}
}

// TestDiscoveryTypoIsAnError: a URL that names a document and answers
// 404 (a typo) is an error naming it, even on a server whose root
// Source Description leads to a Source; a base URL that answers 404 still
// falls back to the well-known URI (§6.3).
func TestDiscoveryTypoIsAnError(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(2, 50))
	s.packDump(pack.Options{})
	typo := s.srv.URL + "/capabilitylst.xml"
	_, err := replica.Discover(t.Context(), nil, location(t, typo))
	if !errors.Is(err, replica.ErrNotFound) || !strings.Contains(err.Error(), typo) || !strings.Contains(err.Error(), "404") {
		t.Errorf("Discover(%s) = %v, want ErrNotFound naming it and its 404", typo, err)
	}
	for _, base := range []string{s.srv.URL + "/nothing-here/", s.srv.URL} {
		src, err := replica.Discover(t.Context(), nil, location(t, base))
		if err != nil || src.Docs[resourcesync.CapResourceDump] == "" || src.Route[0] != "well-known" {
			t.Errorf("Discover(%s) = %+v, %v; want the Source through the well-known URI", base, src, err)
		}
	}
}

// TestDiscoveryOutputDirectory: a local pack output directory is a
// Source: its capabilitylist.xml, else its .well-known/resourcesync, whose
// Capability List is beside the dumps; a hub its Capability List
// advertises is recorded for follow, not refused; a directory with
// neither is ErrNotFound naming it.
func TestDiscoveryOutputDirectory(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	o := pack.Options{BaseURL: "http://127.0.0.1:1/res/", DumpURL: "http://127.0.0.1:1/", SourceDescription: true,
		Channels: layout.Channels{Hub: "http://127.0.0.1:1/hub"}}
	if _, err := pack.Pack(t.Context(), verifytest.Tree(t, files(2, 50)), out, o); err != nil {
		t.Fatal(err)
	}
	for _, wellKnown := range []bool{false, true} {
		if wellKnown { // a Capability List by another name, which the Source Description names
			os.Rename(filepath.Join(out, "capabilitylist.xml"), filepath.Join(out, "caps.xml"))
			write(t, filepath.Join(out, ".well-known", "resourcesync"), verifytest.Encode(t,
				resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapDescription}},
				[]resourcesync.URL{{Loc: "http://127.0.0.1:1/caps.xml", MD: &resourcesync.MD{Capability: resourcesync.CapCapabilityList}}}))
		}
		src, err := replica.Discover(t.Context(), nil, location(t, out))
		if err != nil || src.Docs[resourcesync.CapResourceDump] != filepath.Join(out, layout.DumpName) || len(src.Channels) == 0 ||
			src.Channels[0].Hub != "http://127.0.0.1:1/hub" {
			t.Fatalf("Discover(%s) = %+v, %v", out, src, err)
		}
		if wellKnown && src.CapabilityList != filepath.Join(out, "caps.xml") {
			t.Errorf("Discover(%s) read the Capability List %s, want caps.xml through .well-known/resourcesync", out, src.CapabilityList)
		}
	}
	empty := t.TempDir()
	if _, err := replica.Discover(t.Context(), nil, location(t, empty)); !errors.Is(err, replica.ErrNotFound) || !strings.Contains(err.Error(), empty) {
		t.Errorf("Discover(%s), an empty directory: %v, want ErrNotFound naming it", empty, err)
	}
}
