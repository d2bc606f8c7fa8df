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

// TestSourcesMeantAsTyped: what the user types as SOURCE is what is read,
// or a usage error that says what was meant; nothing else is taken as a
// path, and a refused SOURCE leaves no DIR/.rsdump behind.
func TestSourcesMeantAsTyped(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, c := range []struct{ src, says string }{
		{"htp://x", "rsdump reads no htp: URL"},
		{"file:///x", "rsdump reads no file: URL; give the file's path"},
		{"127.0.0.1:8080/x", "write http://127.0.0.1:8080/x for a URL"},
		{"http:/x", "not an absolute http(s) URL"},
	} {
		for _, args := range [][]string{
			{"sync", c.src, "--dest", "d"},
			{"unpack", c.src, "--dest", "d", "--layout", "path"},
			{"verify", c.src},
			{"get", c.src, "-o", "g"},
		} {
			code, _, stderr := rsdump(t, args...)
			if code != exitUsage || !strings.Contains(stderr, c.says) || !strings.Contains(stderr, `"`+c.src+`"`) {
				t.Errorf("rsdump %q: exit %d, stderr %q; want 2 saying %q", args, code, stderr, c.says)
			}
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("refused sources left %v", left)
	}
}

// TestSyncOutputDirectory: sync OUTDIR reads a local pack output through
// its Capability List, hub and all (the hub is for --follow); a plain
// sync --dest DIR again finds it up to date.
func TestSyncOutputDirectory(t *testing.T) {
	t.Parallel()
	src := verifytest.Tree(t, verifytest.ExampleFiles(t))
	out, dest := t.TempDir(), t.TempDir()
	rsdumpOK(t, "pack", src, "-o", out, "--base-url", verifytest.BaseURL, "--hub", "http://127.0.0.1:1/hub", "--quiet")
	if code, stdout, stderr := rsdump(t, "sync", out, "--dest", dest); code != exitOK || !strings.Contains(stdout+stderr, "baseline") {
		t.Fatalf("sync OUTDIR: exit %d\n%s%s", code, stdout, stderr)
	}
	treeEquals(t, dest, verifytest.ExampleFiles(t))
	if code, stdout, stderr := rsdump(t, "sync", "--dest", dest); code != exitOK || !strings.Contains(stdout+stderr, "up to date") {
		t.Errorf("sync --dest again: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestSyncTypoIsNamed: a URL with a typo that answers 404 is an error
// naming it, though the server's root Source Description leads to a
// Source.
func TestSyncTypoIsNamed(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	t.Cleanup(srv.Close)
	rsdumpOK(t, "pack", verifytest.Tree(t, verifytest.ExampleFiles(t)), "-o", out, "--base-url", verifytest.BaseURL,
		"--dump-url", srv.URL+"/", "--source-description", "--quiet")
	typo := srv.URL + "/capabilitylst.xml"
	code, stdout, stderr := rsdump(t, "sync", typo, "--dest", t.TempDir())
	if code != exitUsage || !strings.Contains(stderr, typo+": HTTP 404") {
		t.Errorf("sync %s: exit %d, want 2 naming it and its 404\n%s%s", typo, code, stdout, stderr)
	}
	if code, stdout, stderr := rsdump(t, "sync", srv.URL+"/", "--dest", t.TempDir(), "-q"); code != exitOK {
		t.Errorf("sync of the base URL: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestSayWhatWasMeant: --only that matches nothing exits 1 saying so;
// --poll without --follow is a usage error.
func TestSayWhatWasMeant(t *testing.T) {
	t.Parallel()
	out := packedExample(t)
	code, stdout, stderr := rsdump(t, "unpack", filepath.Join(out, "resourcedump.xml"), "--dest", t.TempDir(), "--base-url", verifytest.BaseURL, "--only", "no/such/*")
	if code != exitFailed || !strings.Contains(stdout+stderr, `--only "no/such/*" matched no file of the dump`) {
		t.Errorf("--only matching nothing: exit %d\n%s%s", code, stdout, stderr)
	}
	code, _, stderr = rsdump(t, "sync", out, "--dest", t.TempDir(), "--poll", "1h")
	if code != exitUsage || !strings.Contains(stderr, "--poll: only with --follow") {
		t.Errorf("--poll without --follow: exit %d, %q", code, stderr)
	}
}
