package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

const mlCorpus = "../../../shared/metalink/corpus"

func corpusFile(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(mlCorpus, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("corpus file %s not found: ../shared is missing", p)
	}
	return p
}

// TestMetalinkCheck runs --check on documents with known outcomes and
// checks the exit status and the report's lines.
func TestMetalinkCheck(t *testing.T) {
	t.Parallel()
	data := mlRandom(7, 100000)
	dir := mlTree(t, map[string][]byte{"p.zip": data})
	own := filepath.Join(dir, "p.zip.meta4")
	if code, _, stderr := rsdump(t, "metalink", filepath.Join(dir, "p.zip"), "--piece-length", "65536", "-o", own,
		"--mirror", "http://127.0.0.10/,priority=5,location=fr"); code != exitOK {
		t.Fatal(stderr)
	}
	cases := []struct {
		name string
		docs []string
		code int
		want []string
	}{
		{"own", []string{own}, exitOK, []string{
			own + ": valid: 1 file, 0 errors, 0 warnings", `file "p.zip"`, "size 100000 (97.7 KiB)",
			"hash sha-256 " + sha256Hex(data), "pieces sha-256: 2 of 65536 bytes",
			"url http://127.0.0.10/p.zip (priority 5, location fr)"}},
		{"mirrorbrain", []string{corpusFile(t, "libmetalink--LibO_3.5.4_Win_x86_install_multi.msi.meta4")}, exitOK, []string{
			"valid: 1 file, 0 errors, 1 warning", "pieces sha-1: 808 of 262144 bytes", "hash md5 ", "(priority 76, location",
			"warning publisher-v3: "}},
		{"traversal", []string{corpusFile(t, "aria2--metalink4-dirtraversal.xml")}, exitFailed, []string{
			"invalid: ", "error name-traversal: file "}},
		{"not metalink", []string{corpusFile(t, "wget2--test-metalink-archiveP.meta4")}, exitFailed, []string{
			": invalid\n  error not-metalink: "}},
		{"missing", []string{filepath.Join(dir, "nope.meta4")}, exitFailed, []string{"nope.meta4: unreadable: "}},
		{"one bad of two", []string{own, filepath.Join(dir, "nope.meta4")}, exitFailed, []string{
			": valid: ", "unreadable", "1 of 2 documents invalid or unreadable"}},
	}
	for _, c := range cases {
		code, stdout, stderr := rsdump(t, append([]string{"metalink", "--check"}, c.docs...)...)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s%s", c.name, code, c.code, stdout, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stdout+stderr, w) {
				t.Errorf("%s: output lacks %q:\n%s%s", c.name, w, stdout, stderr)
			}
		}
	}
}

// TestMetalinkCheckURL fetches documents over HTTP: a valid one, a 404,
// and one whose Content-Length is over the limit.
func TestMetalinkCheckURL(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(corpusFile(t, "dpb587-metalink--stable-v0.2.0.meta4"))
	if err != nil {
		t.Fatal(err)
	}
	var flaky atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok.meta4":
			w.Write(doc)
		case "/huge.meta4":
			w.Header().Set("Content-Length", "1000000000")
		case "/flaky.meta4":
			if flaky.Add(1) == 1 {
				w.Header().Set("Retry-After", "1")
				http.Error(w, "later", http.StatusServiceUnavailable)
				return
			}
			w.Write(doc)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cases := []struct {
		path string
		code int
		want string
	}{
		{"/ok.meta4", exitOK, "/ok.meta4: valid: 4 files, 0 errors, 0 warnings"},
		{"/gone.meta4", exitFailed, "unreadable: HTTP 404"},
		{"/huge.meta4", exitFailed, "larger than"},
		{"/flaky.meta4", exitOK, "/flaky.meta4: valid: 4 files"}, // a 503 with Retry-After: 1, then the document
	}
	for _, c := range cases {
		code, stdout, stderr := rsdump(t, "metalink", "--check", srv.URL+c.path)
		if code != c.code || !strings.Contains(stdout, c.want) {
			t.Errorf("%s: exit %d, want %d; output lacks %q:\n%s%s", c.path, code, c.code, c.want, stdout, stderr)
		}
	}
	if n := flaky.Load(); n != 2 {
		t.Errorf("/flaky.meta4 asked %d times, want 2", n)
	}
	// One rule for what is a URL (resourcesync.IsURL): a scheme in capitals
	// is a URL, read over HTTP, and "s3:" without a bucket fails as an
	// s3:// URL; neither is opened as a file of that name.
	upper := "HTTP://" + strings.TrimPrefix(srv.URL, "http://") + "/ok.meta4"
	if code, stdout, stderr := rsdump(t, "metalink", "--check", upper); code != exitOK || !strings.Contains(stdout, "valid: 4 files") {
		t.Errorf("%s: exit %d, want it read over HTTP:\n%s%s", upper, code, stdout, stderr)
	}
	if code, stdout, stderr := rsdump(t, "metalink", "--check", "s3:nobucket"); code == exitOK || strings.Contains(stdout+stderr, "no such file") {
		t.Errorf("s3:nobucket: exit %d, want a failure as an s3:// URL, not as a file:\n%s%s", code, stdout, stderr)
	}
}
