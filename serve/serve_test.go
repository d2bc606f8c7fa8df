package serve_test

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/metalink/httpheader"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/serve"
)

// Every output pack wrote is served with its media type, byte for byte.
func TestServesOutputs(t *testing.T) {
	t.Parallel()
	s := newSite(t, files(20), serve.Options{})
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{".zip": "application/zip", ".xml": "application/xml", ".meta4": "application/metalink4+xml"}
	n := 0
	for _, e := range entries {
		if !layout.IsOutput(e.Name()) {
			continue
		}
		n++
		resp, body := get(t, s.URL+"/dump/"+e.Name())
		if resp.StatusCode != 200 || string(body) != string(readFile(t, filepath.Join(s.Dir, e.Name()))) {
			t.Errorf("%s: %s, %d bytes differ from the file", e.Name(), resp.Status, len(body))
		}
		if ct := resp.Header.Get("Content-Type"); ct != want[filepath.Ext(e.Name())] {
			t.Errorf("%s: Content-Type %q", e.Name(), ct)
		}
	}
	if n < 4 {
		t.Fatalf("only %d outputs", n)
	}
}

// Range, If-Range, If-None-Match and HEAD, on a package.
func TestConditionalAndRanges(t *testing.T) {
	t.Parallel()
	s := newSite(t, files(20), serve.Options{})
	name := packages(t, s.Dir)[0]
	data := readFile(t, filepath.Join(s.Dir, name))
	u := s.URL + "/dump/" + name

	resp, body := get(t, u, "Range", "bytes=10-99")
	if resp.StatusCode != http.StatusPartialContent || string(body) != string(data[10:100]) {
		t.Fatalf("Range: %s, %d bytes", resp.Status, len(body))
	}
	etag := resp.Header.Get("ETag")
	if etag != `"sha-256-`+sha(data)+`"` {
		t.Errorf("ETag %s, want the package's sha-256", etag)
	}
	if resp, _ := get(t, u, "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %s", resp.Status)
	}
	if resp, body := get(t, u, "Range", "bytes=5-", "If-Range", etag); resp.StatusCode != http.StatusPartialContent || string(body) != string(data[5:]) {
		t.Errorf("If-Range matching: %s", resp.Status)
	}
	if resp, body := get(t, u, "Range", "bytes=5-", "If-Range", `"other"`); resp.StatusCode != 200 || string(body) != string(data) {
		t.Errorf("If-Range not matching: %s, want the whole package", resp.Status)
	}
	resp, body = do(t, http.MethodHead, u)
	if resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != int64(len(data)) || resp.Header.Get("Digest") == "" {
		t.Errorf("HEAD: %s, length %d, %d body bytes, Digest %q", resp.Status, resp.ContentLength, len(body), resp.Header.Get("Digest"))
	}
	if resp, _ := do(t, http.MethodPost, u); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %s", resp.Status)
	}
}

// RFC 6249 fields on package responses: the digest from the dump
// document, each mirror, and the Metalink; the same on HEAD and ranges.
func TestMetalinkHeaders(t *testing.T) {
	t.Parallel()
	mirrors := []layout.Mirror{{BaseURL: "http://127.0.0.1:1/m1/", Priority: 5, Location: "de"}, {BaseURL: "http://127.0.0.1:2/m2/"}}
	s := newSite(t, files(20), serve.Options{Mirrors: mirrors})
	for _, name := range packages(t, s.Dir) {
		data := readFile(t, filepath.Join(s.Dir, name))
		u := s.URL + "/dump/" + name
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			resp, _ := do(t, method, u, "Range", "bytes=0-0")
			raw, _ := hex.DecodeString(sha(data))
			if d := resp.Header.Get("Digest"); d != "SHA-256="+base64.StdEncoding.EncodeToString(raw) {
				t.Errorf("%s %s: Digest %q", method, name, d)
			}
			if d := resp.Header.Get("Repr-Digest"); d != "sha-256=:"+base64.StdEncoding.EncodeToString(raw)+":" {
				t.Errorf("%s %s: Repr-Digest %q", method, name, d)
			}
			links := httpheader.ParseLinks(resp.Header.Values("Link"), u)
			want := []httpheader.Link{
				{URL: "http://127.0.0.1:1/m1/" + name, Rel: []string{"duplicate"}, Pri: 5, Geo: "de"},
				{URL: "http://127.0.0.1:2/m2/" + name, Rel: []string{"duplicate"}, Pri: 2},
				{URL: u + ".meta4", Rel: []string{"describedby"}, Type: "application/metalink4+xml"},
			}
			if len(links) != len(want) {
				t.Fatalf("%s: links %+v", name, links)
			}
			for i := range want {
				if l := links[i]; l.URL != want[i].URL || l.Pri != want[i].Pri || l.Geo != want[i].Geo || l.Type != want[i].Type || !l.Has(want[i].Rel[0]) {
					t.Errorf("%s: link %d = %+v, want %+v", name, i, l, want[i])
				}
			}
		}
	}
	// Not on the other outputs.
	resp, _ := get(t, s.URL+"/dump/resourcedump.xml")
	if resp.Header.Get("Digest") != "" || resp.Header.Get("Link") != "" {
		t.Errorf("dump document with %q %q", resp.Header.Get("Digest"), resp.Header.Get("Link"))
	}
}

// A package whose length is not the dump document's (rewritten, or being
// rewritten) gets no digest rather than a wrong one; without a dump
// document the digest comes from the package's .meta4, and without either
// there is none.
func TestDigestFollowsTheDocument(t *testing.T) {
	t.Parallel()
	s := newSite(t, files(20), serve.Options{})
	name := packages(t, s.Dir)[0]
	p := filepath.Join(s.Dir, name)
	data := readFile(t, p)
	raw, _ := hex.DecodeString(sha(data))
	want := "SHA-256=" + base64.StdEncoding.EncodeToString(raw)
	digestOf := func() string {
		resp, _ := do(t, http.MethodHead, s.URL+"/dump/"+name)
		return resp.Header.Get("Digest")
	}
	if d := digestOf(); d != want {
		t.Fatalf("Digest %q to begin with, want %q", d, want)
	}
	if err := os.WriteFile(p, append(data, 'x'), 0o644); err != nil {
		t.Fatal(err)
	}
	if d := digestOf(); d != "" {
		t.Errorf("a package longer than the document says has Digest %q", d)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(s.Dir, layout.DumpName)); err != nil {
		t.Fatal(err)
	}
	if d := digestOf(); d != want {
		t.Errorf("Digest %q from the .meta4, want %q", d, want)
	}
	if err := os.Remove(p + ".meta4"); err != nil {
		t.Fatal(err)
	}
	if d := digestOf(); d != "" {
		t.Errorf("Digest %q with no dump document and no .meta4", d)
	}
}

// Only what pack writes is served: not the journal, temporary files,
// other files, directories, symbolic links, or anything outside DIR.
func TestRefuses(t *testing.T) {
	t.Parallel()
	s := newSite(t, files(5), serve.Options{})
	outside := filepath.Join(filepath.Dir(s.Dir), "secret.xml")
	for name, content := range map[string]string{
		".rsdump-pack.journal": "{}", ".resourcedump.xml.123.tmp": "x", "notes.txt": "x", "resourcedump.xml~": "x",
		".rsdump/state.json": "{}", ".well-known/other": "x",
	} {
		p := filepath.Join(s.Dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(outside, []byte("secret"), 0o644)
	if err := os.Symlink(outside, filepath.Join(s.Dir, "changelist.xml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(s.Dir, "resourcedump-part00009.xml"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"/dump/.rsdump-pack.journal", "/dump/.resourcedump.xml.123.tmp", "/dump/notes.txt", "/dump/resourcedump.xml~",
		"/dump/.rsdump/state.json", "/.well-known/other", "/dump/changelist.xml", "/dump/resourcedump-part00009.xml",
		"/dump/../secret.xml", "/dump/%2e%2e/secret.xml", "/secret.xml", "/resourcedump.xml", "/dump",
		"/dump/.well-known/resourcesync", "/res/d0/f000.bin",
	} {
		resp, body := get(t, s.URL+p)
		if resp.StatusCode != http.StatusNotFound || strings.Contains(string(body), "secret") {
			t.Errorf("%s: %s", p, resp.Status)
		}
	}
	if len(s.logs.all()) == 0 {
		t.Error("nothing logged")
	}
}

// The digests of a dump past 50,000 packages come from the parts of its
// index, and those of a Change Dump from changedump.xml.
func TestDigestFromIndexAndChangeDump(t *testing.T) {
	t.Parallel()
	ts, u := listen(t)
	dir := t.TempDir()
	pkgs := map[string][]byte{"resourcedump-00001.zip": []byte("first package"), "changedump-00001.zip": []byte("a change package")}
	for n, b := range pkgs {
		os.WriteFile(filepath.Join(dir, n), b, 0o644)
	}
	entry := func(name string) resourcesync.URL {
		n := int64(len(pkgs[name]))
		return resourcesync.URL{Loc: u + "/dump/" + name, MD: &resourcesync.MD{Hash: "sha-256:" + sha(pkgs[name]), Length: &n, Type: "application/zip"}}
	}
	at := verifytest.Time
	verifytest.WriteDoc(t, filepath.Join(dir, "resourcedump.xml"),
		resourcesync.Header{Kind: resourcesync.SitemapIndex, MD: resourcesync.MD{Capability: resourcesync.CapResourceDump, At: at}},
		[]resourcesync.URL{{Loc: u + "/dump/resourcedump-part00001.xml"}})
	verifytest.WriteDoc(t, filepath.Join(dir, "resourcedump-part00001.xml"),
		resourcesync.Header{MD: resourcesync.MD{Capability: resourcesync.CapResourceDump, At: at}},
		[]resourcesync.URL{entry("resourcedump-00001.zip")})
	verifytest.WriteDoc(t, filepath.Join(dir, "changedump.xml"),
		resourcesync.Header{MD: resourcesync.MD{Capability: resourcesync.CapChangeDump, From: at}},
		[]resourcesync.URL{entry("changedump-00001.zip")})
	s := startSite(t, ts, u, "", dir, serve.Options{})
	for name, b := range pkgs {
		resp, _ := do(t, http.MethodHead, s.URL+"/dump/"+name)
		raw, _ := hex.DecodeString(sha(b))
		if d := resp.Header.Get("Digest"); d != "SHA-256="+base64.StdEncoding.EncodeToString(raw) {
			t.Errorf("%s: Digest %q", name, d)
		}
	}
}

// TestDirGone: once DIR is deleted, or replaced by another directory,
// what the handler serves from it answers 503 saying so, where it
// answered 404 for every output (the index: 200 with none); a name that
// is no output stays 404.
func TestDirGone(t *testing.T) {
	t.Parallel()
	for _, replace := range []bool{false, true} {
		s := newSite(t, files(5), serve.Options{})
		if resp, _ := get(t, s.URL+"/dump/"+layout.DumpName); resp.StatusCode != http.StatusOK {
			t.Fatalf("before: %s", resp.Status)
		}
		if err := os.RemoveAll(s.Dir); err != nil {
			t.Fatal(err)
		}
		if replace {
			os.Mkdir(s.Dir, 0o755)
		}
		for _, p := range []string{"/dump/" + layout.DumpName, "/dump/", "/" + layout.SourceDescriptionName, "/dump/" + layout.CapabilityListName} {
			resp, body := get(t, s.URL+p)
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), s.Dir+", the directory served, was deleted") {
				t.Errorf("replaced %v: %s: %s %q, want 503 saying DIR is gone", replace, p, resp.Status, body)
			}
		}
		if resp, _ := get(t, s.URL+"/dump/notes.txt"); resp.StatusCode != http.StatusNotFound {
			t.Errorf("a name that is no output: %s, want 404", resp.Status)
		}
	}
}
