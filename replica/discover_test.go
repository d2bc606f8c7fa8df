package replica_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
)

// TestDiscoveryRoutes finds the same Source through every route of §6.3,
// and each sync from it ends with the same tree.
func TestDiscoveryRoutes(t *testing.T) {
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
		{"dump document", s.srv.URL + "/" + pack.DumpName, []string{"given"}, []string{"resourcedump"}},
		{"resource list", s.srv.URL + "/resourcelist.xml", []string{"given"}, []string{"resourcelist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := replica.Discover(context.Background(), nil, tc.loc)
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
	s := newSource(t, files(3, 50))
	s.packDump(pack.Options{CapabilityList: ""})
	s.publishResources()
	// pack links the Capability List when told where it will be.
	s.packDump(pack.Options{CapabilityList: s.srv.URL + "/capabilitylist.xml"})
	src, err := replica.Discover(context.Background(), nil, s.srv.URL+"/"+pack.DumpName)
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
	s := newSource(t, nil)
	write(t, filepath.Join(s.out, "index.html"), []byte("<html><head><title>no</title></head><body>nothing</body></html>"))
	_, err := replica.Discover(context.Background(), nil, s.srv.URL+"/")
	if !errors.Is(err, replica.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	os.Remove(filepath.Join(s.out, "index.html"))
	_, err = replica.Discover(context.Background(), nil, s.srv.URL+"/missing.xml")
	if !errors.Is(err, replica.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}
