package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/serve"
)

// docHosts is a dump published at D (its <loc>s and documents) with a
// second mirror M for the packages, each server behind a handler the test
// chooses.
type docHosts struct {
	out  string // the pack output both serve from
	d, m string // base URLs, ending in "/"
}

func newDocHosts(t *testing.T, dHandler, mHandler func(files http.Handler) http.Handler) *docHosts {
	t.Helper()
	tsD, tsM := httptest.NewUnstartedServer(nil), httptest.NewUnstartedServer(nil)
	t.Cleanup(tsD.Close)
	t.Cleanup(tsM.Close)
	h := &docHosts{out: t.TempDir(), d: "http://" + tsD.Listener.Addr().String() + "/", m: "http://" + tsM.Listener.Addr().String() + "/"}
	src := mlTree(t, map[string][]byte{"a.txt": []byte("alpha\n"), "b.bin": mlRandom(17, 300000), "c.bin": mlRandom(18, 200000)})
	if code, _, stderr := rsdump(t, "pack", src, "--base-url", "http://127.0.0.9/rs/", "-o", h.out, "--metalink",
		"--max-package-size", "256K", "--dump-url", h.d, "--mirror", h.m); code != exitOK {
		t.Fatalf("pack: exit %d: %s", code, stderr)
	}
	files := http.FileServer(http.Dir(h.out))
	tsD.Config.Handler, tsM.Config.Handler = dHandler(files), mHandler(files)
	tsD.Start()
	tsM.Start()
	return h
}

// packagesOnly serves the packages and answers 404 for anything else.
func packagesOnly(files http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, ".zip") {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// hangUp closes the connection, with no answer or in the middle of one,
// as a host that died.
func hangUp() { panic(http.ErrAbortHandler) }

// getDocsFailed runs get of D's dump document and checks what a failure
// to save one of its documents must leave: exit 1, an error naming the
// document, every package complete beside nothing half-written, and no
// dump document claiming the directory is a copy of the dump.
func getDocsFailed(t *testing.T, h *docHosts, doc string) {
	t.Helper()
	dl := t.TempDir()
	start := time.Now()
	code, stdout, stderr := rsdump(t, "get", h.d+layout.DumpName, "-o", dl, "--stall-timeout", "2s")
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("took %s", el)
	}
	if code != exitFailed || !strings.Contains(stderr, doc) {
		t.Errorf("exit %d, want %d and an error naming %s\nstdout: %s\nstderr: %s", code, exitFailed, doc, stdout, stderr)
	}
	zips, _ := filepath.Glob(filepath.Join(h.out, "*.zip"))
	for _, z := range zips {
		want, _ := os.ReadFile(z)
		if got, err := os.ReadFile(filepath.Join(dl, filepath.Base(z))); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: not complete (%v)", filepath.Base(z), err)
		}
	}
	entries, _ := os.ReadDir(dl)
	for _, e := range entries {
		name := e.Name()
		published, err := os.ReadFile(filepath.Join(h.out, name))
		got, _ := os.ReadFile(filepath.Join(dl, name))
		switch {
		case name == layout.DumpName:
			t.Errorf("%s saved although %s was not", name, doc)
		case err != nil:
			t.Errorf("%s left in the output directory", name)
		case !bytes.Equal(got, published):
			t.Errorf("%s differs from what was published", name)
		}
	}
}

// TestGetDocumentsHostDies is the case of issue 23: the host serving the
// dump's documents dies once the packages are being fetched; they all
// arrive from the second mirror, but the dump document cannot be saved,
// and get says so instead of exiting 0.
func TestGetDocumentsHostDies(t *testing.T) {
	t.Parallel()
	var dead atomic.Bool
	dies := func(files http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, ".zip") {
				dead.Store(true) // the packages are being fetched
			}
			if dead.Load() {
				hangUp()
				return
			}
			files.ServeHTTP(w, r)
		})
	}
	h := newDocHosts(t, dies, func(files http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, ".zip") {
				dead.Store(true)
			}
			files.ServeHTTP(w, r)
		})
	})
	getDocsFailed(t, h, h.d+layout.DumpName)
}

// TestGetDocumentFailures: a detached manifest or a Metalink that no
// server gives in full fails get, naming the document as the dump links
// it, though every package arrived.
func TestGetDocumentFailures(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		name  string
		fault func(w http.ResponseWriter, size int)
	}{
		"manifest 500": {"resourcedump-00002.manifest.xml", func(w http.ResponseWriter, _ int) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}},
		"manifest cut": {"resourcedump-00002.manifest.xml", func(w http.ResponseWriter, size int) {
			w.Header().Set("Content-Length", strconv.Itoa(size))
			w.WriteHeader(http.StatusOK)
			w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<urlset"))
			w.(http.Flusher).Flush()
			hangUp()
		}},
		"metalink 404": {"resourcedump-00002.zip.meta4", func(w http.ResponseWriter, _ int) { http.Error(w, "gone", http.StatusNotFound) }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var out string
			faulty := func(files http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/"+c.name {
						fi, _ := os.Stat(filepath.Join(out, filepath.Base(r.URL.Path)))
						c.fault(w, int(fi.Size()))
						return
					}
					files.ServeHTTP(w, r)
				})
			}
			h := newDocHosts(t, faulty, packagesOnly)
			out = h.out
			getDocsFailed(t, h, h.d+c.name)
		})
	}
}

// TestGetDocumentCutThenMirror: a detached manifest whose connection
// drops part way is read again from beside the second mirror, and the
// copy saved is the whole document, not the part first received.
func TestGetDocumentCutThenMirror(t *testing.T) {
	t.Parallel()
	const name = "resourcedump-00002.manifest.xml"
	var out string
	cuts := func(files http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/"+name {
				files.ServeHTTP(w, r)
				return
			}
			b, _ := os.ReadFile(filepath.Join(out, name))
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			w.Write(b[:len(b)/2])
			w.(http.Flusher).Flush()
			hangUp()
		})
	}
	h := newDocHosts(t, cuts, func(files http.Handler) http.Handler { return files })
	out = h.out
	dl := t.TempDir()
	if code, stdout, stderr := rsdump(t, "get", h.d+layout.DumpName, "-o", dl, "--stall-timeout", "2s"); code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	want, _ := os.ReadFile(filepath.Join(out, name))
	if got, err := os.ReadFile(filepath.Join(dl, name)); err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s: %d bytes saved (%v), want the %d published", name, len(got), err, len(want))
	}
}

// servedSource is a pack output behind the real serve handler, documents
// under /dump/ and the resources under /rs/, as rsdump serve publishes
// them.
func servedSource(t *testing.T) (base string) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	t.Cleanup(ts.Close)
	base = "http://" + ts.Listener.Addr().String()
	src := mlTree(t, map[string][]byte{"a.txt": []byte("alpha\n"), "b.bin": mlRandom(19, 100000)})
	out := t.TempDir()
	if code, _, stderr := rsdump(t, "pack", src, "--base-url", base+"/rs/", "--dump-url", base+"/dump/", "-o", out); code != exitOK {
		t.Fatalf("pack: exit %d: %s", code, stderr)
	}
	hd, err := serve.New(out, serve.Options{BaseURL: base + "/rs/", DumpURL: base + "/dump/", Resources: src})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = hd
	ts.Start()
	return base
}

// TestGetRefusesWhatIsNoDump: get of the page rsdump serve answers at the
// dump's directory, of its Capability List, of a resource, or of a page
// that links the Source with <link rel="resourcesync">, is refused before
// anything is saved, naming the URL and what it answered, with a hint
// giving the Resource Dump the Source publishes.
func TestGetRefusesWhatIsNoDump(t *testing.T) {
	t.Parallel()
	base := servedSource(t)
	hint := "rsdump get " + base + "/dump/" + layout.DumpName
	// A page elsewhere that links the Source only in its <head>.
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!DOCTYPE html><html><head><link rel="resourcesync" href="%s/dump/capabilitylist.xml"></head><body></body></html>`, base)
	}))
	defer page.Close()
	for u, what := range map[string]string{
		base + "/dump/": "HTML",
		base + "/dump/" + layout.CapabilityListName: "Capability List",
		base + "/rs/a.txt":                          "text/plain",
		page.URL + "/about":                         "HTML",
	} {
		dl := t.TempDir()
		code, stdout, stderr := rsdump(t, "get", u, "-o", dl, "--stall-timeout", "2s")
		if code != exitFailed || !strings.Contains(stderr, u+": ") || !strings.Contains(stderr, what) || !strings.Contains(stderr, "hint: ") || !strings.Contains(stderr, hint) {
			t.Errorf("get %s: exit %d, want %d, an error naming it and %q, and a hint %q\nstdout: %s\nstderr: %s", u, code, exitFailed, what, hint, stdout, stderr)
		}
		if entries, _ := os.ReadDir(dl); len(entries) != 0 {
			t.Errorf("get %s left %d files in the output directory", u, len(entries))
		}
	}
}
