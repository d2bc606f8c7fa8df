package transfer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mt "github.com/rsdump/rsdump/internal/mirrortest"
	"github.com/rsdump/rsdump/metalink"
)

func metalinkDoc(t *testing.T, data []byte, name string, urls ...string) []byte {
	t.Helper()
	f := fileFor(name, data, plen)
	size := int64(len(data))
	mf := metalink.File{Name: name, Size: &size, Hashes: []metalink.Hash{{Type: "sha-256", Value: f.Hash}},
		Pieces: []metalink.Pieces{{Type: "sha-256", Length: plen, Hashes: f.Pieces.Hashes}}}
	for i, u := range urls {
		mf.URLs = append(mf.URLs, metalink.URL{URL: u, Priority: i + 1})
	}
	var b bytes.Buffer
	if err := metalink.Encode(&b, &metalink.Metalink{Files: []metalink.File{mf}}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestResolveMetalinkFile(t *testing.T) {
	t.Parallel()
	data := payload(500<<10, 50)
	a, _ := serve(t, data)
	b, _ := serve(t, data)
	path := filepath.Join(t.TempDir(), "x.meta4")
	os.WriteFile(path, metalinkDoc(t, data, "pkg.zip", b.URL, a.URL), 0o644)
	g := New(fastOptions())
	files, err := g.Resolve(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || len(files[0].Pieces.Hashes) != 8 || len(files[0].Mirrors) != 2 || files[0].Hash != sha(data) {
		t.Fatalf("resolved %+v", files)
	}
	dir := t.TempDir()
	if _, err := g.Get(context.Background(), dir, files); err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "pkg.zip", data)
}

// RFC 6249: the first server's Link and Digest headers give mirrors and
// the hash; a mirror's own Link headers are ignored.
func TestResolveMetalinkHTTP(t *testing.T) {
	t.Parallel()
	data := zipLike(300<<10, 51) // a plain URL is a package
	sum := sha256.Sum256(data)
	rogue, rm := serve(t, []byte("not it"))
	m2, _ := serve(t, data, mt.Header("Link", "<"+rogue.URL+">; rel=duplicate"))
	origin, _ := serve(t, data,
		mt.Header("Link", fmt.Sprintf("<%s/f.bin>; rel=duplicate; pri=2; geo=de, <http://x.invalid/sig.asc>; rel=describedby; type=\"application/pgp-signature\"", m2.URL)),
		mt.Header("Digest", "SHA-256="+base64.StdEncoding.EncodeToString(sum[:])))
	g := New(fastOptions())
	files, err := g.Resolve(context.Background(), origin.URL+"/dir/f.bin")
	if err != nil {
		t.Fatal(err)
	}
	f := files[0]
	if f.Name != "f.bin" || f.Size != int64(len(data)) || f.HashAlg != "sha-256" || f.Hash != sha(data) || len(f.Mirrors) != 2 || f.Mirrors[1].Location != "de" {
		t.Fatalf("resolved %+v", f)
	}
	dir := t.TempDir()
	if _, err := g.Get(context.Background(), dir, files); err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "f.bin", data)
	if rm.Requests.Load() != 0 {
		t.Error("a mirror's Link header was followed")
	}
}

func TestResolveDescribedByMetalink(t *testing.T) {
	t.Parallel()
	data := zipLike(300<<10, 52)
	m, _ := serve(t, data)
	doc := metalinkDoc(t, data, "f.bin", m.URL)
	ml := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(doc) }))
	t.Cleanup(ml.Close)
	origin, _ := serve(t, data, mt.Header("Link", "<"+ml.URL+"/f.meta4>; rel=describedby; type=\"application/metalink4+xml\""))
	files, err := New(fastOptions()).Resolve(context.Background(), origin.URL+"/f.bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(files[0].Pieces.Hashes) == 0 || len(files[0].Mirrors) != 2 {
		t.Fatalf("resolved %+v", files[0])
	}
}

func TestResolveDumpDocument(t *testing.T) {
	t.Parallel()
	data, data2 := payload(200<<10, 53), payload(150<<10, 54)
	a, _ := serve(t, data)
	b, _ := serve(t, data)
	c, _ := serve(t, data2)
	doc2 := metalinkDoc(t, data2, "resourcedump-00002.zip", c.URL)
	ml := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(doc2) }))
	t.Cleanup(ml.Close)
	doc := `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcedump" at="2026-01-01T00:00:00Z"/>
<url><loc>` + a.URL + `/resourcedump-00001.zip</loc>
<rs:md hash="sha-256:` + sha(data) + `" length="` + fmt.Sprint(len(data)) + `" type="application/zip"/>
<rs:ln rel="duplicate" href="` + b.URL + `/p1.zip" pri="1"/>
</url>
<url><loc>` + a.URL + `/resourcedump-00002.zip</loc>
<rs:md length="` + fmt.Sprint(len(data2)) + `" type="application/zip"/>
<rs:ln rel="describedby" type="application/metalink4+xml" href="` + ml.URL + `/p2.meta4"/>
</url></urlset>`
	path := filepath.Join(t.TempDir(), "resourcedump.xml")
	os.WriteFile(path, []byte(doc), 0o644)
	g := New(fastOptions())
	files, err := g.Resolve(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Name != "resourcedump-00001.zip" || len(files[0].Mirrors) != 2 || files[0].Hash != sha(data) {
		t.Fatalf("resolved %+v", files)
	}
	if f := files[1]; len(f.Pieces.Hashes) != 3 || f.Hash != sha(data2) || len(f.Mirrors) != 2 {
		t.Fatalf("describedby Metalink not merged: %+v", f)
	}
	dir := t.TempDir()
	if _, err := g.Get(context.Background(), dir, files); err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "resourcedump-00001.zip", data)
	mustMatch(t, dir, "resourcedump-00002.zip", data2)
}

func TestCheckRange(t *testing.T) {
	t.Parallel()
	mk := func(status int, cr string, n int64) *http.Response {
		return &http.Response{StatusCode: status, ContentLength: n, Header: http.Header{"Content-Range": {cr}}}
	}
	for _, tc := range []struct {
		r  *http.Response
		ok bool
	}{
		{mk(206, "bytes 10-19/100", 10), true},
		{mk(206, "bytes 10-19/100", -1), true},
		{mk(206, "bytes 10-19/101", 10), false},
		{mk(206, "bytes 11-20/100", 10), false},
		{mk(206, "bytes 10-19/*", 10), false},
		{mk(206, "bytes 10-19/100", 11), false},
		{mk(200, "", 100), false},
		{mk(416, "", 0), false},
	} {
		if err := checkRange(tc.r, "u", 10, 20, 100); (err == nil) != tc.ok {
			t.Errorf("%d %q %d: err %v", tc.r.StatusCode, tc.r.Header.Get("Content-Range"), tc.r.ContentLength, err)
		}
	}
}

// A dump split into parts by a sitemap index is followed part by part;
// an index listing an index, and a part that is not a URL, are refused.
func TestResolveDumpIndex(t *testing.T) {
	t.Parallel()
	data1, data2 := payload(100<<10, 55), payload(70<<10, 56)
	m, _ := serve(t, data1)
	m2, _ := serve(t, data2)
	part := func(loc string, data []byte) string {
		return `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcedump" at="2026-01-01T00:00:00Z"/>
<url><loc>` + loc + `</loc><rs:md hash="sha-256:` + sha(data) + `" length="` + fmt.Sprint(len(data)) + `"/></url>
</urlset>`
	}
	index := func(locs ...string) string {
		s := `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcedump" at="2026-01-01T00:00:00Z"/>`
		for _, l := range locs {
			s += "<sitemap><loc>" + l + "</loc></sitemap>\n"
		}
		return s + "</sitemapindex>"
	}
	var docs map[string]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, ok := docs[r.URL.Path]; ok {
			w.Write([]byte(d))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	docs = map[string]string{
		"/part1.xml": part(m.URL+"/resourcedump-00001.zip", data1),
		"/part2.xml": part(m2.URL+"/resourcedump-00002.zip", data2),
		"/index.xml": index(srv.URL+"/part1.xml", srv.URL+"/part2.xml"),
	}
	dir := t.TempDir()
	g := New(fastOptions())
	// A local index reads its parts from beside it, as a remote one
	// reads them from its server.
	local := filepath.Join(dir, "resourcedump.xml")
	os.WriteFile(local, []byte(index("http://127.0.0.9/rs/part1.xml", "part2.xml")), 0o644)
	os.WriteFile(filepath.Join(dir, "part1.xml"), []byte(docs["/part1.xml"]), 0o644)
	os.WriteFile(filepath.Join(dir, "part2.xml"), []byte(docs["/part2.xml"]), 0o644)
	os.WriteFile(filepath.Join(dir, "nested-part.xml"), []byte(index("part1.xml")), 0o644)
	for _, src := range []string{local, srv.URL + "/index.xml"} {
		files, err := g.Resolve(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 2 || files[0].Name != "resourcedump-00001.zip" || files[1].Hash != sha(data2) {
			t.Fatalf("%s: resolved %+v", src, files)
		}
	}
	// The remote index and its parts are saved under the names a local
	// copy reads them by, the index last.
	saved, err := g.SaveDocuments(context.Background(), t.TempDir(), srv.URL+"/index.xml")
	if err != nil || len(saved) != 3 || filepath.Base(saved[2]) != "index.xml" {
		t.Errorf("saved %v, %v; want the two parts, then index.xml", saved, err)
	}
	for _, p := range saved {
		if b, _ := os.ReadFile(p); string(b) != docs["/"+filepath.Base(p)] {
			t.Errorf("%s is not the document served", p)
		}
	}
	files, _ := g.Resolve(context.Background(), local)
	out := t.TempDir()
	if _, err := g.Get(context.Background(), out, files); err != nil {
		t.Fatal(err)
	}
	mustMatch(t, out, "resourcedump-00001.zip", data1)
	mustMatch(t, out, "resourcedump-00002.zip", data2)

	for name, doc := range map[string]string{
		"nested":  index("nested-part.xml"),
		"missing": index(srv.URL + "/gone.xml"),
	} {
		bad := filepath.Join(dir, name+".xml")
		os.WriteFile(bad, []byte(doc), 0o644)
		if _, err := g.Resolve(context.Background(), bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: %v, want an error naming %s", name, err, bad)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
