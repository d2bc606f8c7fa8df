package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/httpc/httpctest"
	"github.com/rsdump/rsdump/transfer"
)

// TestMetalinkCheckUnanswered: --check of a URL on such a server fails
// within the timeout, on a line naming the URL and the stall or timeout.
func TestMetalinkCheckUnanswered(t *testing.T) {
	saved := fetcher
	fetcher = transfer.New(transfer.Options{StallTimeout: 300 * time.Millisecond})
	defer func() { fetcher = saved }()
	doc := `<?xml version="1.0" encoding="UTF-8"?><metalink xmlns="urn:ietf:params:xml:ns:metalink">` +
		strings.Repeat("<!-- padding -->\n", 1000)
	for name, base := range httpctest.UnansweringData(t, []byte(doc), 1000) {
		u := base + "/f.meta4"
		start := time.Now()
		code, stdout, stderr := rsdump(t, "metalink", "--check", u)
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("%s: took %s", name, el)
		}
		if code != exitFailed || !strings.Contains(stdout, u+": ") || !strings.Contains(stdout, "stalled") && !strings.Contains(stdout, "timeout") {
			t.Errorf("%s: exit %d, want %d, and a line naming %s:\n%s%s", name, code, exitFailed, u, stdout, stderr)
		}
	}
}

// TestGetUnanswered: get of a URL on such a server fails within a few
// stall timeouts, naming the URL.
func TestGetUnanswered(t *testing.T) {
	t.Parallel()
	for name, base := range httpctest.UnansweringData(t, mlRandom(3, 256<<10), 1000) {
		u := base + "/f.bin"
		start := time.Now()
		code, stdout, stderr := rsdump(t, "get", "--stall-timeout", "300ms", "--max-failures", "1", "-q", "-o", t.TempDir(), u)
		if el := time.Since(start); el > 4*time.Second {
			t.Errorf("%s: took %s", name, el)
		}
		if code != exitFailed || !strings.Contains(stderr, u) {
			t.Errorf("%s: exit %d, want %d, and an error naming %s:\n%s%s", name, code, exitFailed, u, stdout, stderr)
		}
	}
}

// TestVerifyUnpackSilentPackage: a dump whose package sits on a server
// that never answers fails verify and unpack within about one
// --stall-timeout, naming the package's URL; the retries meant for a
// server that answered once are not spent on it.
func TestVerifyUnpackSilentPackage(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	silent := httpctest.Silent(t)
	src := mlTree(t, map[string][]byte{"a.txt": []byte("alpha\n")})
	if code, _, stderr := rsdump(t, "pack", src, "--base-url", "http://127.0.0.9/rs/", "-o", out, "--dump-url", silent+"/"); code != exitOK {
		t.Fatalf("pack: exit %d: %s", code, stderr)
	}
	docs := httptest.NewServer(http.FileServer(http.Dir(out)))
	defer docs.Close()
	doc := docs.URL + "/resourcedump.xml"
	for _, args := range [][]string{
		{"verify", doc, "--stall-timeout", "300ms"},
		{"unpack", doc, "--dest", t.TempDir(), "--base-url", "http://127.0.0.9/rs/", "--stall-timeout", "300ms"},
	} {
		start := time.Now()
		code, stdout, stderr := rsdump(t, args...)
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("%s: took %s", args[0], el)
		}
		if code != exitFailed || !strings.Contains(stdout+stderr, silent+"/resourcedump-00001.zip") {
			t.Errorf("%s: exit %d, want 1 naming the package URL\n%s%s", args[0], code, stdout, stderr)
		}
	}
}
