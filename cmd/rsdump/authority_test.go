package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rsdump/rsdump/internal/s3test"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/metalink"
)

// hostile is a small Source on loopback that serves the documents it is
// given, any other .zip path as the package zip (nil: 404), and records
// every path asked for.
type hostile struct {
	*httptest.Server
	zip  []byte
	mu   sync.Mutex
	docs map[string][]byte
	seen []string
}

func newHostile(t *testing.T, zip []byte) *hostile {
	h := &hostile{zip: zip, docs: map[string][]byte{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, r.URL.Path)
		d, ok := h.docs[r.URL.Path]
		h.mu.Unlock()
		switch {
		case ok:
			w.Write(d)
		case strings.HasSuffix(r.URL.Path, ".zip") && h.zip != nil:
			http.ServeContent(w, r, "p.zip", verifytest.Time, bytes.NewReader(h.zip))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hostile) put(path string, doc []byte) {
	h.mu.Lock()
	h.docs[path] = doc
	h.mu.Unlock()
}

// askedZip reports the .zip paths asked for.
func (h *hostile) askedZip() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, p := range h.seen {
		if strings.HasSuffix(p, ".zip") {
			out = append(out, p)
		}
	}
	return out
}

// rsDoc is a ResourceSync <urlset> of capability c with the <url>s given.
func rsDoc(c string, urls ...string) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="` + c + `" at="2024-01-01T00:00:00Z"/>
` + strings.Join(urls, "\n") + "\n</urlset>\n")
}

// rsURL is a <url> naming loc, with data's length and sha-256, and the
// extra elements given (rs:ln links).
func rsURL(loc string, data []byte, extra string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(loc))
	sum := sha256.Sum256(data)
	return fmt.Sprintf(`<url><loc>%s</loc><rs:md length="%d" hash="sha-256:%x" type="application/zip"/>%s</url>`, b.String(), len(data), sum, extra)
}

// examplePackage is the package pack makes of the example tree.
func examplePackage(t *testing.T) []byte {
	b, err := os.ReadFile(filepath.Join(packedExample(t), "resourcedump-00001.zip"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// metalinkFor is a Metalink of one file, name, with data's size and hash,
// served from urls.
func metalinkFor(t *testing.T, name string, data []byte, urls ...string) []byte {
	size := int64(len(data))
	sum := sha256.Sum256(data)
	f := metalink.File{Name: name, Size: &size, Hashes: []metalink.Hash{{Type: "sha-256", Value: hex.EncodeToString(sum[:])}}}
	for _, u := range urls {
		f.URLs = append(f.URLs, metalink.URL{URL: u})
	}
	var b bytes.Buffer
	if err := metalink.Encode(&b, &metalink.Metalink{Files: []metalink.File{f}}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// destFiles lists the files under dir, rsdump's own state directory left
// out.
func destFiles(t *testing.T, dir string) []string {
	var out []string
	for rel := range verifytest.ReadTreeFiles(t, dir) {
		out = append(out, filepath.Join(dir, filepath.FromSlash(rel)))
	}
	return out
}

// A Source reached over HTTP never makes rsdump use the Destination's S3
// credentials: an s3:// reference in its Capability List, Resource List,
// dump document (a package's <loc>, a rel="duplicate" mirror), in a
// Metalink it links or in one a package's Link header names, is refused,
// naming the document and the reference, before any request reaches the
// S3 server, and nothing is written; the same object is read once the
// user names S3 (--base-url s3://...).
func TestRemoteSourceBorrowsNoS3(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "private")
	pkg := examplePackage(t)
	secret := []byte("the Destination's own private object\n")
	srv.Put(t, "private", "key", secret)
	srv.Put(t, "private", "pkg.zip", pkg)
	srv.Put(t, "private", "resourcedump.xml", rsDoc("resourcedump", rsURL("s3://private/pkg.zip", pkg, "")))
	proxy := srv.NewProxy(t)
	ep := "--s3-endpoint=" + proxy.URL

	h := newHostile(t, nil)
	const meta4 = `<rs:ln rel="describedby" type="application/metalink4+xml" href="%s"/>`
	h.put("/list/resourcelist.xml", rsDoc("resourcelist", rsURL("s3://private/key", secret, "")))
	h.put("/cl/capabilitylist.xml", rsDoc("capabilitylist", `<url><loc>s3://private/resourcedump.xml</loc><rs:md capability="resourcedump"/></url>`))
	h.put("/loc/resourcedump.xml", rsDoc("resourcedump", rsURL("s3://private/pkg.zip", pkg, "")))
	h.put("/dup/resourcedump.xml", rsDoc("resourcedump", rsURL(h.URL+"/dup/gone.zip", pkg, `<rs:ln rel="duplicate" href="s3://private/pkg.zip"/>`)))
	h.put("/ml/resourcedump.xml", rsDoc("resourcedump", rsURL(h.URL+"/ml/gone.zip", pkg, fmt.Sprintf(meta4, h.URL+"/ml/gone.zip.meta4"))))
	h.put("/ml/gone.zip.meta4", metalinkFor(t, "gone.zip", pkg, "s3://private/pkg.zip"))

	base := "--base-url=" + verifytest.BaseURL
	cases := []struct {
		cmd, doc, ref string
		args          []string
	}{
		{"sync", "/list/resourcelist.xml", "s3://private/key", nil}, // the base URL inferred from the list
		{"sync", "/cl/capabilitylist.xml", "s3://private/resourcedump.xml", []string{base}},
		{"sync", "/loc/resourcedump.xml", "s3://private/pkg.zip", []string{base}},
		{"unpack", "/loc/resourcedump.xml", "s3://private/pkg.zip", []string{base}},
		{"get", "/loc/resourcedump.xml", "s3://private/pkg.zip", nil},
		{"sync", "/dup/resourcedump.xml", "s3://private/pkg.zip", []string{base}},
		{"unpack", "/dup/resourcedump.xml", "s3://private/pkg.zip", []string{base}},
		{"get", "/dup/resourcedump.xml", "s3://private/pkg.zip", nil},
		{"sync", "/ml/resourcedump.xml", "s3://private/pkg.zip", []string{base}},
		{"get", "/ml/resourcedump.xml", "s3://private/pkg.zip", nil},
	}
	for _, c := range cases {
		dest := t.TempDir()
		doc := h.URL + c.doc
		args := append([]string{c.cmd, "-q", ep, doc}, c.args...)
		if c.cmd == "get" {
			args = append(args, "-o", dest)
		} else {
			args = append(args, "--dest", dest)
		}
		code, stdout, stderr := rsdump(t, args...)
		if code != exitFailed || !strings.Contains(stderr, c.ref) || !strings.Contains(stderr, h.URL+"/") {
			t.Errorf("%s %s: exit %d, want 1 naming the document and %s\nstdout: %s\nstderr: %s", c.cmd, doc, code, c.ref, stdout, stderr)
		}
		if files := destFiles(t, dest); len(files) > 0 {
			t.Errorf("%s %s wrote %v", c.cmd, doc, files)
		}
	}
	if n := proxy.Requests.Load(); n != 0 {
		t.Errorf("%d requests reached the S3 server", n)
	}

	// A plain package URL whose Link header names a Metalink that names
	// the object.
	h.put("/hdr/p.meta4", metalinkFor(t, "p.zip", pkg, "s3://private/pkg.zip"))
	linked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", `<`+h.URL+`/hdr/p.meta4>; rel=describedby; type="application/metalink4+xml"`)
		http.ServeContent(w, r, "p.zip", verifytest.Time, bytes.NewReader(pkg))
	}))
	t.Cleanup(linked.Close)
	dest := t.TempDir()
	code, _, stderr := rsdump(t, "get", "-q", ep, linked.URL+"/p.zip", "-o", dest)
	if code != exitFailed || !strings.Contains(stderr, "s3://private/pkg.zip") || !strings.Contains(stderr, h.URL+"/hdr/p.meta4") || len(destFiles(t, dest)) > 0 {
		t.Errorf("get of a URL linking a Metalink naming s3://: exit %d\n%s", code, stderr)
	}
	if n := proxy.Requests.Load(); n != 0 {
		t.Errorf("%d requests reached the S3 server", n)
	}

	// The user names S3: the same list's object is read.
	dest = t.TempDir()
	code, _, stderr = rsdump(t, "sync", "-q", ep, h.URL+"/list/resourcelist.xml", "--dest", dest, "--base-url", "s3://private/")
	if b, err := os.ReadFile(filepath.Join(dest, "key")); code != exitOK || err != nil || !bytes.Equal(b, secret) {
		t.Errorf("sync with --base-url s3://private/: exit %d, %v\n%s", code, err, stderr)
	}
	if proxy.Requests.Load() == 0 {
		t.Error("no request reached the S3 server once the user named it")
	}
	// A later run takes the Source the state records, and its grant.
	dest = t.TempDir()
	if code, _, stderr := rsdump(t, "sync", "-q", ep, "s3://private/resourcedump.xml", "--dest", dest, base); code != exitOK {
		t.Fatalf("sync s3://private/resourcedump.xml: exit %d\n%s", code, stderr)
	}
	if code, stdout, stderr := rsdump(t, "sync", ep, "--dest", dest); code != exitOK || !strings.Contains(stdout, "up to date") {
		t.Errorf("sync --dest of a tree synced from s3://: exit %d\n%s%s", code, stdout, stderr)
	}
}

// A package reference in a dump document fetched over HTTP that is not an
// absolute URL (relative, with a bad escape or a control character, or a
// local path) is refused, naming the document and the reference: unpack,
// sync and verify neither read a local file of that name (each exists,
// and is a good package) nor fetch anything for it.
func TestRemoteDocumentOpensNoLocalPath(t *testing.T) {
	pkg := examplePackage(t)
	local := t.TempDir()
	t.Chdir(local) // relative names are looked up here
	for _, name := range []string{"%zz", "p\tq.zip", "real.zip", "resourcedump-00001.zip"} {
		os.WriteFile(filepath.Join(local, name), pkg, 0o644)
	}
	h := newHostile(t, pkg) // serves the package at every .zip path
	refs := []string{"../x.zip", "resourcedump-00001.zip", "%zz", "p\tq.zip", filepath.Join(local, "real.zip")}
	for i, ref := range refs {
		doc := fmt.Sprintf("%s/d%d/resourcedump.xml", h.URL, i)
		h.put(strings.TrimPrefix(doc, h.URL), rsDoc("resourcedump", rsURL(ref, pkg, "")))
		for _, cmd := range []string{"unpack", "sync", "verify"} {
			dest := t.TempDir()
			args := []string{cmd, "-q", doc}
			if cmd != "verify" {
				args = append(args, "--dest", dest, "--base-url", verifytest.BaseURL)
			}
			code, stdout, stderr := rsdump(t, args...)
			if code != exitFailed || !strings.Contains(stderr, doc) || !strings.Contains(stderr, strconv.Quote(ref)) {
				t.Errorf("%s of a document naming %q: exit %d, want 1 naming %s and the reference\nstdout: %s\nstderr: %s", cmd, ref, code, doc, stdout, stderr)
			}
			if files := destFiles(t, dest); len(files) > 0 {
				t.Errorf("%s of a document naming %q wrote %d files", cmd, ref, len(files))
			}
		}
	}
	if asked := h.askedZip(); len(asked) > 0 {
		t.Errorf("packages fetched for references that are not absolute URLs: %v", asked)
	}
}

// An s3:// key with a "." or ".." segment is refused, naming it, before
// any request.
func TestS3DotSegmentsRefused(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "private")
	srv.Put(t, "private", "key", []byte("x"))
	proxy := srv.NewProxy(t)
	for _, u := range []string{"s3://private/a/../key", "s3://private/./key", "s3://private/a/%2E%2E/key"} {
		code, _, stderr := rsdump(t, "verify", "-q", "--s3-endpoint="+proxy.URL, u)
		if code != exitUsage || !strings.Contains(stderr, u) || !strings.Contains(stderr, "segment") {
			t.Errorf("verify %s: exit %d, want 2 naming it\n%s", u, code, stderr)
		}
	}
	if n := proxy.Requests.Load(); n != 0 {
		t.Errorf("%d requests reached the S3 server", n)
	}
}

// rsdump metalink of a dump read over HTTP does not look for its packages
// on this disk, not even under the path the document's URL makes.
func TestMetalinkOfRemoteDumpReadsNoLocalFile(t *testing.T) {
	pkg := examplePackage(t)
	local := t.TempDir()
	t.Chdir(local)
	h := newHostile(t, nil)
	doc := h.URL + "/d/resourcedump.xml"
	h.put("/d/resourcedump.xml", rsDoc("resourcedump", rsURL(h.URL+"/d/p.zip", pkg, "")))
	dir := filepath.Join(local, filepath.Dir(doc)) // "http:/127.0.0.1:PORT/d"
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "p.zip"), []byte("not the package"), 0o644)
	code, stdout, stderr := rsdump(t, "metalink", "-q", doc)
	if code != exitOK || !strings.Contains(stdout, h.URL+"/d/p.zip") {
		t.Errorf("metalink %s: exit %d\nstdout: %s\nstderr: %s", doc, code, stdout, stderr)
	}
}
