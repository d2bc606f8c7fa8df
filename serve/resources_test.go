package serve_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/metalink/httpheader"
	"github.com/rsdump/rsdump/serve"
)

// With Resources, every file of the tree is served at its <loc>, and
// nothing outside the tree is reachable.
func TestServesResources(t *testing.T) {
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

// A resource response names the Capability List that covers it (§6.3.3)
// when the directory has one, and the Source Description is served at the
// well-known URI.
func TestDiscovery(t *testing.T) {
	ts, u := listen(t)
	src, dir := packTree(t, files(3), u)
	capList := `<?xml version="1.0" encoding="UTF-8"?>` + "\n<urlset/>\n"
	sd := `<?xml version="1.0" encoding="UTF-8"?>` + "\n<urlset><!-- description --></urlset>\n"
	os.WriteFile(filepath.Join(dir, "capabilitylist.xml"), []byte(capList), 0o644)
	os.MkdirAll(filepath.Join(dir, ".well-known"), 0o755)
	os.WriteFile(filepath.Join(dir, ".well-known", "resourcesync"), []byte(sd), 0o644)
	s := startSite(t, ts, u, src, dir, serve.Options{Resources: src})

	resp, body := get(t, s.URL+"/.well-known/resourcesync")
	if resp.StatusCode != 200 || string(body) != sd || resp.Header.Get("Content-Type") != "application/xml" {
		t.Errorf("well-known: %s %q %q", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	if resp, body := get(t, s.URL+"/dump/capabilitylist.xml"); resp.StatusCode != 200 || string(body) != capList {
		t.Errorf("capability list: %s", resp.Status)
	}
	resp, _ = do(t, http.MethodHead, s.URL+"/res/d0/f000.bin")
	ls := httpheader.ParseLinks(resp.Header.Values("Link"), s.URL)
	if len(ls) != 1 || !ls[0].Has("resourcesync") || ls[0].URL != s.URL+"/dump/capabilitylist.xml" {
		t.Errorf("resource links %+v", ls)
	}
}

func escapePath(rel string) string {
	return strings.NewReplacer("%", "%25", " ", "%20", "#", "%23").Replace(rel)
}
