package serve_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/metalink/httpheader"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/serve"
)

// With Resources, every file of the tree is served at its <loc>, and
// nothing outside the tree is reachable.
func TestServesResources(t *testing.T) {
	t.Parallel()
	fs := files(10)
	fs["a dir/n%ame #1.txt"] = "spaces and escapes"
	fs[".hidden/x"] = "dot"
	ts, u := listen(t)
	src, dir := packTree(t, fs, u)
	s := startSite(t, ts, u, src, dir, serve.Options{Resources: src})
	for rel, content := range fs {
		loc := s.URL + "/res/" + escapePath(rel)
		resp, body := get(t, loc)
		if resp.StatusCode != 200 || string(body) != content {
			t.Errorf("%s: %s, %q", loc, resp.Status, body)
		}
		if resp.Header.Get("ETag") == "" {
			t.Errorf("%s: no ETag", loc)
		}
	}
	outside := filepath.Join(filepath.Dir(src), "outside.txt")
	os.WriteFile(outside, []byte("secret"), 0o644)
	os.Symlink(outside, filepath.Join(src, "link.txt"))
	os.Symlink("..", filepath.Join(src, "up"))
	for _, p := range []string{"/res/../outside.txt", "/res/%2e%2e/outside.txt", "/res/link.txt", "/res/up/outside.txt", "/res/d0", "/res/", "/res//d0/f000.bin", "/res/d0/./f000.bin", "/outside.txt"} {
		resp, body := get(t, s.URL+p)
		if resp.StatusCode != http.StatusNotFound || strings.Contains(string(body), "secret") {
			t.Errorf("%s: %s", p, resp.Status)
		}
	}
}

// Discovery as pack writes it (§6.3): the Source Description at the
// well-known URI names the Capability List, which names the Resource List
// and the Resource Dump, all served; the Resource List's <loc>s are the
// resources, and a resource response links to the Capability List.
func TestDiscovery(t *testing.T) {
	t.Parallel()
	ts, u := listen(t)
	fs := files(6)
	src := verifytest.Tree(t, fs)
	dir := t.TempDir()
	o := pack.Options{BaseURL: u + "/res/", DumpURL: u + "/dump/", SourceDescription: true, At: verifytest.Time}
	if _, err := pack.Pack(context.Background(), src, dir, o); err != nil {
		t.Fatal(err)
	}
	s := startSite(t, ts, u, src, dir, serve.Options{Resources: src})

	caps := locs(t, s.URL+"/.well-known/resourcesync", resourcesync.CapDescription)
	if len(caps) != 1 || caps[0] != s.URL+"/dump/capabilitylist.xml" {
		t.Fatalf("Source Description names %q", caps)
	}
	docs := locs(t, caps[0], resourcesync.CapCapabilityList)
	if !slices.Contains(docs, s.URL+"/dump/resourcelist.xml") || !slices.Contains(docs, s.URL+"/dump/resourcedump.xml") {
		t.Fatalf("Capability List names %q", docs)
	}
	resp, page := get(t, s.URL+"/dump/")
	link := `<link rel="resourcesync" href="` + caps[0] + `">`
	if resp.StatusCode != 200 || !strings.Contains(string(page), link) || !strings.Contains(string(page), `href="resourcedump.xml"`) {
		t.Errorf("the directory's page: %s\n%s", resp.Status, page)
	}
	if ls := httpheader.ParseLinks(resp.Header.Values("Link"), s.URL); len(ls) != 1 || ls[0].URL != caps[0] {
		t.Errorf("the directory's page links %+v", ls)
	}
	res := locs(t, s.URL+"/dump/resourcelist.xml", resourcesync.CapResourceList)
	if len(res) != len(fs) {
		t.Fatalf("Resource List has %d entries, want %d", len(res), len(fs))
	}
	for _, loc := range res {
		resp, body := get(t, loc)
		rel := strings.TrimPrefix(loc, s.URL+"/res/")
		if resp.StatusCode != 200 || string(body) != fs[rel] {
			t.Errorf("%s: %s", loc, resp.Status)
		}
		ls := httpheader.ParseLinks(resp.Header.Values("Link"), loc)
		if len(ls) != 1 || !ls[0].Has("resourcesync") || ls[0].URL != caps[0] {
			t.Errorf("%s: links %+v", loc, ls)
		}
	}
}

// locs fetches a document, checks its capability and returns its <loc>s.
func locs(t *testing.T, u, capability string) []string {
	t.Helper()
	resp, body := get(t, u)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/xml" {
		t.Fatalf("%s: %s, %s", u, resp.Status, resp.Header.Get("Content-Type"))
	}
	dec, err := resourcesync.NewDecoder(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", u, err)
	}
	if c := dec.Header().MD.Capability; c != capability {
		t.Fatalf("%s: capability %q, want %q", u, c, capability)
	}
	var out []string
	err = dec.Each(func(e resourcesync.URL) error { out = append(out, e.Loc); return nil })
	if err != nil {
		t.Fatalf("%s: %v", u, err)
	}
	return out
}

func escapePath(rel string) string {
	return strings.NewReplacer("%", "%25", " ", "%20", "#", "%23").Replace(rel)
}

// An output directory inside the resources' tree (pack skips it when it
// walks) is not reachable through the resources route: not its journal,
// not its packages.
func TestOutputInsideResources(t *testing.T) {
	t.Parallel()
	ts, u := listen(t)
	src := verifytest.Tree(t, files(3))
	dir := filepath.Join(src, "out")
	if _, err := pack.Pack(context.Background(), src, dir, pack.Options{BaseURL: u + "/res/", DumpURL: u + "/dump/"}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, ".rsdump-pack.journal"), []byte("journal"), 0o644)
	s := startSite(t, ts, u, src, dir, serve.Options{Resources: src})
	for _, p := range []string{"/res/out/.rsdump-pack.journal", "/res/out/resourcedump.xml"} {
		if resp, _ := get(t, s.URL+p); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %s", p, resp.Status)
		}
	}
	if resp, _ := get(t, s.URL+"/dump/resourcedump.xml"); resp.StatusCode != 200 {
		t.Errorf("the dump document: %s", resp.Status)
	}
	if resp, _ := get(t, s.URL+"/res/d0/f000.bin"); resp.StatusCode != 200 {
		t.Errorf("a resource: %s", resp.Status)
	}
}

// Whatever spelling reaches a file of the output directory through the
// resources route (a link to the directory, a link to one of its files,
// ".." after a link, a chain of links, percent-encoding), it is not
// served: the rule is the file's real place, as pack's walk skips the
// output directory by its real path. Links to other files of the tree
// are served as before. Through the output route, a linked directory
// does not lead to a file pack did not write either.
func TestOutputHiddenThroughLinks(t *testing.T) {
	t.Parallel()
	ts, u := listen(t)
	src := verifytest.Tree(t, files(3))
	dir := filepath.Join(src, "out")
	o := pack.Options{BaseURL: u + "/res/", DumpURL: u + "/dump/", SourceDescription: true}
	if _, err := pack.Pack(context.Background(), src, dir, o); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		".rsdump-pack.journal": "journal", ".resourcedump.xml.1.tmp": "tmp", ".rsdump/state.json": "state", ".rsdump/resourcesync": "state",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	for link, target := range map[string]string{
		"alias": "out", "j": "out/.rsdump-pack.journal", "d0/j": "../out/.rsdump-pack.journal", "sub/up": "..",
		"chain": "sub/up/alias", "d1/dot": ".", "ok": "d0", "okf": "d0/f000.bin", "d2/okup": "../d0/f000.bin",
	} {
		p := filepath.Join(src, filepath.FromSlash(link))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	s := startSite(t, ts, u, src, dir, serve.Options{Resources: src})
	for _, p := range []string{
		"/res/alias/.rsdump-pack.journal", "/res/alias/.resourcedump.xml.1.tmp", "/res/alias/.rsdump/state.json",
		"/res/alias/resourcedump.xml", "/res/alia%73/.rsdump-pack.journal", "/res/%61lias/.rsdump-pack.journal",
		"/res/j", "/res/d0/j", "/res/sub/up/out/.rsdump-pack.journal", "/res/sub/up/alias/.rsdump-pack.journal",
		"/res/chain/.rsdump-pack.journal", "/res/sub/up/sub/up/alias/.rsdump/state.json", "/res/d1/dot/d1/dot/../out/.rsdump-pack.journal",
		"/res/sub/up%2Fout%2F.rsdump-pack.journal", "/res/alias/..%2Fout/.rsdump-pack.journal",
	} {
		resp, body := get(t, s.URL+p)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %s, %q", p, resp.Status, body)
		}
	}
	for p, want := range map[string]string{"/res/ok/f000.bin": "0:", "/res/okf": "0:", "/res/d2/okup": "0:", "/res/sub/up/d0/f000.bin": "0:"} {
		if resp, body := get(t, s.URL+p); resp.StatusCode != 200 || string(body) != want {
			t.Errorf("%s: %s, %q", p, resp.Status, body)
		}
	}
	os.Rename(filepath.Join(dir, ".well-known"), filepath.Join(dir, ".old-well-known"))
	os.Symlink(".rsdump", filepath.Join(dir, ".well-known"))
	if resp, body := get(t, s.URL+"/.well-known/resourcesync"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the Source Description through a linked directory: %s, %q", resp.Status, body)
	}
}

// Resources that are the output directory itself serve none of it: pack
// skips the whole source then.
func TestResourcesAreTheOutput(t *testing.T) {
	t.Parallel()
	ts, u := listen(t)
	src, dir := packTree(t, files(3), u)
	os.WriteFile(filepath.Join(dir, ".rsdump-pack.journal"), []byte("journal"), 0o644)
	s := startSite(t, ts, u, src, dir, serve.Options{Resources: dir})
	for _, p := range []string{"/res/.rsdump-pack.journal", "/res/resourcedump.xml"} {
		if resp, body := get(t, s.URL+p); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %s, %q", p, resp.Status, body)
		}
	}
	if resp, _ := get(t, s.URL+"/dump/resourcedump.xml"); resp.StatusCode != 200 {
		t.Errorf("the dump document: %s", resp.Status)
	}
}

// A resource small enough to be read whole (smallResource) and one
// larger, handed to the connection, answer alike: whole, by range, HEAD,
// and 304 to a request that has its ETag, with the same headers.
func TestResourceSizes(t *testing.T) {
	t.Parallel()
	small := strings.Repeat("s", 2048)
	large := strings.Repeat("0123456789", 10_000) // 100,000 bytes
	fs := map[string]string{"small.bin": small, "large.txt": large, "empty.txt": ""}
	ts, u := listen(t)
	src, dir := packTree(t, fs, u)
	s := startSite(t, ts, u, src, dir, serve.Options{Resources: src})
	for name, content := range fs {
		loc := s.URL + "/res/" + name
		resp, body := get(t, loc)
		if resp.StatusCode != 200 || string(body) != content || resp.ContentLength != int64(len(content)) {
			t.Fatalf("%s: %s, %d bytes, Content-Length %d", name, resp.Status, len(body), resp.ContentLength)
		}
		for _, h := range []string{"ETag", "Last-Modified", "Content-Type", "Accept-Ranges", "Link"} {
			if resp.Header.Get(h) == "" {
				t.Errorf("%s: no %s", name, h)
			}
		}
		if content != "" {
			resp, body = get(t, loc, "Range", "bytes=1-5")
			if resp.StatusCode != http.StatusPartialContent || string(body) != content[1:6] {
				t.Errorf("%s, bytes 1-5: %s, %q", name, resp.Status, body)
			}
		}
		resp, body = do(t, http.MethodHead, loc)
		if resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != int64(len(content)) {
			t.Errorf("%s, HEAD: %s, %d bytes, Content-Length %d", name, resp.Status, len(body), resp.ContentLength)
		}
		etag := resp.Header.Get("ETag")
		if resp, _ = get(t, loc, "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
			t.Errorf("%s, If-None-Match %s: %s", name, etag, resp.Status)
		}
	}
	if resp, _ := get(t, s.URL+"/res/large.txt"); !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("large.txt: Content-Type %s", resp.Header.Get("Content-Type"))
	}
	for _, r := range s.logs.all() {
		name := strings.TrimPrefix(r.Path, "/res/")
		if r.Method == http.MethodGet && r.Status == 200 && r.Bytes != int64(len(fs[name])) {
			t.Errorf("%s: logged %d bytes, sent %d", r.Path, r.Bytes, len(fs[name]))
		}
	}
}

// A resource's link to the Capability List is made for the host it was
// asked on, whichever host came before; it goes when the list goes, and
// comes back with it, within a few seconds (it is looked for once a
// second, not once a request).
func TestResourceLinkFollowsTheList(t *testing.T) {
	t.Parallel()
	tr := smallTree(t, 1, 10)
	ts := httptest.NewServer(tr.h)
	defer ts.Close()
	u := ts.URL + "/res/" + tr.names[0]
	link := func(host string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("Link")
	}
	for _, host := range []string{"a.example", "b.example", "a.example"} {
		if l, want := link(host), "<http://"+host+"/res/"+layout.CapabilityListName+">"; !strings.HasPrefix(l, want) {
			t.Errorf("on %s: Link %q, want %s", host, l, want)
		}
	}
	list := filepath.Join(tr.dir, layout.CapabilityListName)
	within := func(what string, gone bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for (link("a.example") == "") != gone {
			if time.Now().After(deadline) {
				t.Fatalf("the Capability List %s: the link did not follow in 5 s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := os.Remove(list); err != nil {
		t.Fatal(err)
	}
	within("removed", true)
	if err := os.WriteFile(list, []byte("<urlset/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	within("written again", false)
}
