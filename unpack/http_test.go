package unpack_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
	"github.com/rsdump/rsdump/verify/verifytest"
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
	srv, _ := serveDump(t)
	dst := t.TempDir()
	res, fs := run(t, srv.URL+"/"+pack.DumpName, dst, unpack.Options{Client: client})
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
	srv, out := serveDump(t)
	zp := filepath.Join(out, "resourcedump-00001.zip")
	z, _ := os.ReadFile(zp)
	os.WriteFile(zp, verifytest.Flip(z, 100), 0o644)
	dst := t.TempDir()
	res, fs := run(t, srv.URL+"/"+pack.DumpName, dst, unpack.Options{Client: client})
	if _, ok := find(fs, verify.Error, verify.CheckHash, ""); !ok || res.Written != 0 {
		t.Errorf("corrupt download not refused: %+v\n%s", res, dump(fs))
	}
	if got := contents(readTree(t, dst)); len(got) != 0 {
		t.Errorf("files written from a corrupt package: %v", keys(got))
	}
}

func TestVerifyOverHTTP(t *testing.T) {
	srv, out := serveDump(t)
	var fs []verify.Finding
	sum, err := verify.Verify(t.Context(), []string{srv.URL + "/" + pack.DumpName}, verify.Options{Client: client, Report: func(f verify.Finding) { fs = append(fs, f) }})
	if err != nil || sum.Problems() != 0 || sum.Verified != 9 {
		t.Fatalf("%v %+v\n%s", err, sum, dump(fs))
	}
	zp := filepath.Join(out, "resourcedump-00001.zip")
	z, _ := os.ReadFile(zp)
	os.WriteFile(zp, verifytest.Flip(z, 100), 0o644)
	fs = nil
	sum, _ = verify.Verify(t.Context(), []string{srv.URL + "/" + pack.DumpName}, verify.Options{Client: client, Report: func(f verify.Finding) { fs = append(fs, f) }})
	if _, ok := find(fs, verify.Error, verify.CheckHash, ""); !ok {
		t.Errorf("package hash mismatch not found over HTTP: %+v\n%s", sum, dump(fs))
	}
}

// TestVerifyNoRange refuses a server that ignores Range, with a finding
// that says so.
func TestVerifyNoRange(t *testing.T) {
	_, out := serveDump(t)
	z, _ := os.ReadFile(filepath.Join(out, "resourcedump-00001.zip"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(z) }))
	defer srv.Close()
	var fs []verify.Finding
	verify.Verify(t.Context(), []string{srv.URL + "/p.zip"}, verify.Options{Client: client, Report: func(f verify.Finding) { fs = append(fs, f) }})
	if f, ok := find(fs, verify.Error, verify.CheckRead, ""); !ok || !strings.Contains(f.Msg, "Range") {
		t.Errorf("no clear error for a server without Range:\n%s", dump(fs))
	}
}

