package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// deadURL is an http URL on 127.0.0.1 where nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// TestPackMirrorIsLoc packs the way the README shows, --metalink with
// mirrors and no --dump-url, with a --base-url where nothing is served.
// The packages' <loc> is the first mirror (said on stderr and in --json),
// and the dump served from there verifies and unpacks over HTTP.
func TestPackMirrorIsLoc(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	defer srv.Close()
	dead := deadURL(t)
	src := mlTree(t, map[string][]byte{"a.txt": []byte("alpha\n"), "b.bin": mlRandom(1, 100000)})
	base := dead + "/rs/"
	code, stdout, stderr := rsdump(t, "pack", src, "--base-url", base, "-o", out, "--metalink",
		"--mirror", srv.URL+"/", "--mirror", dead+"/mirror2/", "--json")
	if code != exitOK {
		t.Fatalf("pack: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "first mirror, "+srv.URL+"/") {
		t.Errorf("pack did not say the packages are at the first mirror: %q", stderr)
	}
	var s packSummary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil || s.DumpURL != srv.URL+"/" {
		t.Errorf("--json dump_url %q (%v), want %s/", s.DumpURL, err, srv.URL)
	}
	doc, _ := os.ReadFile(filepath.Join(out, "resourcedump.xml"))
	if strings.Contains(string(doc), "<loc>"+base) {
		t.Errorf("a package <loc> is under --base-url:\n%s", doc)
	}
	meta4, _ := os.ReadFile(filepath.Join(out, "resourcedump-00001.zip.meta4"))
	if strings.Contains(string(meta4), base) || !strings.Contains(string(meta4), `priority="1">`+srv.URL+"/resourcedump-00001.zip<") {
		t.Errorf(".meta4 does not list the first mirror first with priority 1, or lists --base-url:\n%s", meta4)
	}
	if code, _, stderr := rsdump(t, "verify", srv.URL+"/resourcedump.xml"); code != exitOK {
		t.Errorf("verify of the served dump: exit %d\n%s", code, stderr)
	}
	dest := t.TempDir()
	if code, _, stderr := rsdump(t, "unpack", srv.URL+"/resourcedump.xml", "--dest", dest, "--base-url", base); code != exitOK {
		t.Errorf("unpack of the served dump: exit %d\n%s", code, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "a.txt")); err != nil || string(b) != "alpha\n" {
		t.Errorf("unpacked a.txt: %q %v", b, err)
	}
}

// TestPackBadBaseURL: a base URL that cannot be encoded unambiguously is
// a usage error, before anything is written.
func TestPackBadBaseURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://127.0.0.1/100%/", "http://bücher.example/"} {
		out := filepath.Join(t.TempDir(), "out")
		code, _, stderr := rsdump(t, "pack", t.TempDir(), "--base-url", u, "-o", out)
		if code != exitUsage || !strings.Contains(stderr, "base-url") && !strings.Contains(stderr, "base URL") {
			t.Errorf("%s: exit %d, stderr %q; want 2", u, code, stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: output directory created", u)
		}
	}
}
