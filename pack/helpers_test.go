package pack

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/sharedtest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/resourcesync"
)

var fixedTime = verifytest.Time

// tree writes files under a new directory, all with mtime fixedTime.
func tree(t testing.TB, files map[string]string) string { return verifytest.Tree(t, files) }

// copyExample writes testdata/example out again with fixed mtimes.
func copyExample(t testing.TB) string { return verifytest.Tree(t, verifytest.ExampleFiles(t)) }

func testOptions() Options {
	return Options{BaseURL: "http://127.0.0.1/rs", At: fixedTime, Hashes: []string{digest.MD5, digest.SHA256}}
}

func mustPack(t testing.TB, src string, o Options) (*Result, string) {
	t.Helper()
	out := t.TempDir()
	res, err := Pack(context.Background(), src, out, o)
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	return res, out
}

// decodeAll reads a whole ResourceSync document.
func decodeAll(t testing.TB, r io.Reader) (resourcesync.Header, []resourcesync.URL) {
	t.Helper()
	d, err := resourcesync.NewDecoder(r)
	if err != nil {
		t.Fatal(err)
	}
	var urls []resourcesync.URL
	for {
		u, err := d.Next()
		if err == io.EOF {
			return d.Header(), urls
		}
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, u)
	}
}

// checkPackage opens a package with archive/zip and checks every
// bitstream against its manifest: length, every hash, and that the
// entries and manifest list the same paths. It returns the manifest
// entries.
func checkPackage(t testing.TB, path string) []resourcesync.URL {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		if files[f.Name] != nil {
			t.Errorf("%s: duplicate entry %s", path, f.Name)
		}
		files[f.Name] = f
	}
	mf := files["manifest.xml"]
	if mf == nil {
		t.Fatalf("%s: no manifest.xml", path)
	}
	rc, _ := mf.Open()
	mbytes, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	detached, err := os.ReadFile(manifestPathFor(path))
	if err != nil || !bytes.Equal(detached, mbytes) {
		t.Errorf("%s: detached manifest differs from manifest.xml (%v)", path, err)
	}
	_, urls := decodeAll(t, bytes.NewReader(mbytes))
	if len(urls) != len(files)-1 {
		t.Errorf("%s: manifest lists %d bitstreams, ZIP has %d", path, len(urls), len(files)-1)
	}
	for _, u := range urls {
		checkBitstream(t, files, u)
	}
	return urls
}

func manifestPathFor(zipPath string) string {
	return filepath.Join(filepath.Dir(zipPath), manifestName(filepath.Base(zipPath)))
}

func checkBitstream(t testing.TB, files map[string]*zip.File, u resourcesync.URL) {
	t.Helper()
	f := files[u.MD.Path[1:]]
	if f == nil {
		t.Errorf("%s: no entry %s", u.Loc, u.MD.Path)
		return
	}
	want, err := digest.Parse(u.MD.Hash)
	if err != nil {
		t.Fatal(err)
	}
	mh, _ := digest.NewMulti(want.Algs()...)
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.Copy(mh, rc); err != nil { // archive/zip checks the CRC
		t.Errorf("%s: %v", f.Name, err)
	}
	if mh.Len() != *u.MD.Length {
		t.Errorf("%s: length %d, manifest says %d", f.Name, mh.Len(), *u.MD.Length)
	}
	if _, bad, unchecked := digest.Check(want, mh.Sums()); len(bad)+len(unchecked) > 0 {
		t.Errorf("%s: hash mismatch %v, unchecked %v", f.Name, bad, unchecked)
	}
}

// The schema drivers of ResourceSync 1.1 (ANSI/NISO Z39.99-2017), in the
// shared schemas: the 0.9.1 schema lacks the datetime of every change.
const (
	urlsetSchema       = "rs-urlset-1.1.xsd"
	sitemapIndexSchema = "rs-sitemapindex-1.1.xsd"
)

// xmllint validates a document against the ResourceSync schema, or skips
// when xmllint is not installed.
func xmllint(t *testing.T, path, schema string) {
	t.Helper()
	sharedtest.Xmllint(t, path, schema)
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openZip(path string) (*zip.ReadCloser, error) { return zip.OpenReader(path) }

// readIndexed reads a Change List Index or Change Dump Index in dir and
// the documents it names, in its order: each validates against the 1.1
// schema, is closed, starts where the one before ends, links back to the
// index, and has the index's capability. It returns the index's header,
// its entries, and the entries of its documents one after the other.
func readIndexed(t *testing.T, dir, name string) (resourcesync.Header, []resourcesync.URL, []resourcesync.URL) {
	t.Helper()
	h, parts := verifytest.ReadDoc(t, filepath.Join(dir, name))
	if h.Kind != resourcesync.SitemapIndex || len(parts) == 0 || !h.MD.From.Equal(parts[0].MD.From) {
		t.Fatalf("%s: %+v with %d documents: want an index from where its first starts", name, h, len(parts))
	}
	xmllint(t, filepath.Join(dir, name), sitemapIndexSchema)
	var all []resourcesync.URL
	for i, p := range parts {
		part := resourcesync.BaseName(p.Loc)
		ph, urls := verifytest.ReadDoc(t, filepath.Join(dir, part))
		ln, _ := ph.Link("index")
		switch {
		case ph.Kind != resourcesync.URLSet || ph.MD.Capability != h.MD.Capability:
			t.Errorf("%s: %+v, want a %s <urlset>", part, ph, h.MD.Capability)
		case !ph.MD.From.Equal(p.MD.From) || !ph.MD.Until.Equal(p.MD.Until) || ph.MD.Until.IsZero():
			t.Errorf("%s: from %s until %s, the index says %+v: want it closed, as named", part, ph.MD.From, ph.MD.Until, p.MD)
		case i > 0 && !p.MD.From.Equal(parts[i-1].MD.Until):
			t.Errorf("%s: from %s, the document before ends at %s", part, p.MD.From, parts[i-1].MD.Until)
		case resourcesync.BaseName(ln.Href) != name:
			t.Errorf("%s: rel=index %q, want %s", part, ln.Href, name)
		}
		xmllint(t, filepath.Join(dir, part), urlsetSchema)
		all = append(all, urls...)
	}
	if h.MD.Capability == resourcesync.CapChangeList && !h.MD.Until.Equal(parts[len(parts)-1].MD.Until) {
		t.Errorf("%s: until %s, its last document ends at %s", name, h.MD.Until, parts[len(parts)-1].MD.Until)
	}
	return h, parts, all
}
