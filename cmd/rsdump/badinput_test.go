package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
)

// A malformed document and an oversized one are both bad input: exit 1,
// for verify, an audit and unpack, local or remote; the message names the
// document once. Usage errors stay 2.
func TestBadDocumentsExitOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mal := filepath.Join(dir, "mal.xml")
	os.WriteFile(mal, []byte(`<?xml version="1.0"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="resourcedump" at="2024-01-01T00:00:00Z"/>
<url><loc>http://127.0.0.1/p.zip</loc><rs:md length="1"></url></urlset>`), 0o644)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/mal.xml") {
			http.ServeFile(w, r, mal)
			return
		}
		w.Header().Set("Content-Length", "60000000") // over the sitemap limit; the client stops here
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	big := srv.URL + "/big.xml"
	tree := t.TempDir()
	for _, doc := range []string{mal, srv.URL + "/mal.xml", big} {
		for _, args := range [][]string{
			{"verify", doc},
			{"verify", "--tree", tree, "--base-url", verifytest.BaseURL, "--against", doc},
			{"unpack", doc, "--dest", t.TempDir(), "--base-url", verifytest.BaseURL},
		} {
			code, stdout, stderr := rsdump(t, args...)
			if code != exitFailed {
				t.Errorf("%q: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, exitFailed, stdout, stderr)
			}
			if n := strings.Count(stderr, doc); n != 1 {
				t.Errorf("%q: the message names %s %d times: %s", args, doc, n, stderr)
			}
		}
	}
	if code, _, _ := rsdump(t, "verify"); code != exitUsage {
		t.Errorf("verify without a target: exit %d, want %d", code, exitUsage)
	}
}

// A package that cannot be read is named as the finding's source and, at
// most, once more as the mirror that failed; not also as its URI and in
// each layer of error wrapping.
func TestUnreadablePackageNamedOnce(t *testing.T) {
	t.Parallel()
	var doc []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/resourcedump.xml" {
			w.Write(doc)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	b, _ := os.ReadFile(verifytest.ResourceDump(t, t.TempDir(), []byte("not served")))
	pkg := srv.URL + "/p.zip"
	doc = []byte(strings.ReplaceAll(string(b), verifytest.BaseURL+"dumps/resourcedump-00001.zip", pkg))
	code, _, stderr := rsdump(t, "verify", srv.URL+"/resourcedump.xml")
	if code != exitFailed || strings.Count(stderr, pkg) > 2 || strings.Contains(stderr, pkg+": "+pkg) {
		t.Errorf("exit %d; want 1 and %s named at most twice: %s", code, pkg, stderr)
	}
}
