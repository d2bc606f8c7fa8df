package unpack_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc/httpctest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
)

// serveDump packs the example with package URLs on a loopback server
// that serves the output directory, with Range support.
func serveDump(t *testing.T) (srv *httptest.Server, out string) {
	out = t.TempDir()
	srv = httptest.NewServer(http.FileServer(http.Dir(out)))
	t.Cleanup(srv.Close)
	o := pack.Options{BaseURL: verifytest.BaseURL, DumpURL: srv.URL + "/", At: fixedTime}
	if _, err := pack.Pack(t.Context(), tree(t, exampleFiles(t)), out, o); err != nil {
		t.Fatal(err)
	}
	return srv, out
}

var client = &http.Client{Timeout: 10 * time.Second}

func TestUnpackOverHTTP(t *testing.T) {
	t.Parallel()
	srv, _ := serveDump(t)
	dst := t.TempDir()
	res, fs := run(t, srv.URL+"/"+layout.DumpName, dst, unpack.Options{Client: client})
	if res.Problems() != 0 || res.Written != 9 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, tree(t, exampleFiles(t))))
	if entries, _ := os.ReadDir(filepath.Join(dst, ".rsdump", "cache")); len(entries) != 0 {
		t.Errorf("cache not emptied: %v", entries)
	}
}

// TestCorruptDownload serves a package that differs from the dump
// document: nothing from it lands.
func TestCorruptDownload(t *testing.T) {
	t.Parallel()
	srv, out := serveDump(t)
	zp := filepath.Join(out, "resourcedump-00001.zip")
	z, _ := os.ReadFile(zp)
	os.WriteFile(zp, verifytest.Flip(z, 100), 0o644)
	dst := t.TempDir()
	res, fs := run(t, srv.URL+"/"+layout.DumpName, dst, unpack.Options{Client: client})
	if _, ok := find(fs, finding.Error, finding.CheckHash, ""); !ok || res.Written != 0 {
		t.Errorf("corrupt download not refused: %+v\n%s", res, dump(fs))
	}
	if got := contents(readTree(t, dst)); len(got) != 0 {
		t.Errorf("files written from a corrupt package: %v", keys(got))
	}
}

// A dump whose <loc> host is down is fetched from its rel="duplicate"
// mirror: remote packages go through the transfer engine, which uses
// every mirror the document names.
func TestUnpackFromDuplicateWhenLocIsDown(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	t.Cleanup(srv.Close)
	o := pack.Options{BaseURL: verifytest.BaseURL, DumpURL: deadURL(t) + "/rs/", At: fixedTime,
		Metalink: &pack.MetalinkOptions{Mirrors: []layout.Mirror{{BaseURL: srv.URL + "/", Priority: 1}}}}
	if _, err := pack.Pack(t.Context(), tree(t, exampleFiles(t)), out, o); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	res, fs := run(t, srv.URL+"/"+layout.DumpName, dst, unpack.Options{Client: client, DryRun: true})
	if res.Problems() != 0 || res.Written != 9 {
		t.Fatalf("dry run: %+v\n%s", res, dump(fs))
	}
	res, fs = run(t, srv.URL+"/"+layout.DumpName, dst, unpack.Options{Client: client})
	if res.Problems() != 0 || res.Written != 9 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, tree(t, exampleFiles(t))))
}

// deadURL is the URL of a loopback port that nothing listens on.
func deadURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	return "http://" + l.Addr().String()
}

// TestUnpackRetriesDocuments unpacks a dump whose document and detached
// manifests each answer 503 once: every one is asked again, and a dry
// run (which reads the detached manifests) and then the unpack (which
// reads the document again, and the packages) find and write the whole
// tree. Before the one opener, the first 503 failed the run. Packages
// are not refused by the wrapper: the transfer engine has its own
// retries.
func TestUnpackRetriesDocuments(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	f := httpctest.FailingFirst(http.FileServer(http.Dir(out)), http.StatusServiceUnavailable, 1,
		func(p string) bool { return strings.HasSuffix(p, ".xml") })
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	o := pack.Options{BaseURL: verifytest.BaseURL, DumpURL: srv.URL + "/", At: fixedTime}
	if _, err := pack.Pack(t.Context(), tree(t, exampleFiles(t)), out, o); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	res, fs := run(t, srv.URL+"/"+layout.DumpName, dst, unpack.Options{Client: client, DryRun: true})
	if res.Problems() != 0 || res.Written != 9 {
		t.Fatalf("dry run: %+v\n%s", res, dump(fs))
	}
	f.Reset()
	res, fs = run(t, srv.URL+"/"+layout.DumpName, dst, unpack.Options{Client: client})
	if res.Problems() != 0 || res.Written != 9 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, tree(t, exampleFiles(t))))
	if n := f.Refused.Load(); n < 3 {
		t.Errorf("%d documents answered 503, want the dump document twice and its manifest", n)
	}
}
