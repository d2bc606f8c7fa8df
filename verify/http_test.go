package verify_test

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
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/verify"
)

var client = &http.Client{Timeout: 10 * time.Second}

// serveDump packs the example with package URLs on a loopback server that
// serves the output directory, with Range support.
func serveDump(t *testing.T) (*httptest.Server, string) {
	out := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	t.Cleanup(srv.Close)
	o := pack.Options{BaseURL: verifytest.BaseURL, DumpURL: srv.URL + "/", At: fixedTime}
	if _, err := pack.Pack(t.Context(), tree(t, exampleFiles(t)), out, o); err != nil {
		t.Fatal(err)
	}
	return srv, out
}

// TestVerifyOverHTTP verifies a published dump through Range requests,
// then the same dump with a damaged package.
func TestVerifyOverHTTP(t *testing.T) {
	srv, out := serveDump(t)
	sum, fs := run(t, verify.Options{Client: client}, srv.URL+"/"+layout.DumpName)
	if sum.Problems() != 0 || sum.Verified != 9 || sum.Packages != 1 {
		t.Fatalf("%+v\n%s", sum, dump(fs))
	}
	zp := filepath.Join(out, "resourcedump-00001.zip")
	z, _ := os.ReadFile(zp)
	os.WriteFile(zp, verifytest.Flip(z, 100), 0o644)
	sum, fs = run(t, verify.Options{Client: client}, srv.URL+"/"+layout.DumpName)
	found := false
	for _, f := range fs {
		found = found || f.Severity == finding.Error && f.Code == finding.CheckHash && f.Path == "" && strings.Contains(f.Msg, "sha-256")
	}
	if !found {
		t.Errorf("package hash mismatch not found over HTTP: %+v\n%s", sum, dump(fs))
	}
}

// TestVerifyNoRange: a server that ignores Range serves the package whole,
// over one connection, and it verifies.
func TestVerifyNoRange(t *testing.T) {
	z := verifytest.Intact(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(z) }))
	defer srv.Close()
	sum, fs := run(t, verify.Options{Client: client}, srv.URL+"/p.zip")
	if sum.Problems() != 0 || sum.Packages != 1 || sum.Verified == 0 {
		t.Errorf("%+v\n%s", sum, dump(fs))
	}
}

func TestVerifyChangeDump(t *testing.T) {
	p1 := verifytest.ChangePackage{From: fixedTime, Until: fixedTime.Add(time.Hour), Changes: []verifytest.File{
		{Rel: "a.txt", Data: "a", Change: "created", Lastmod: fixedTime.Add(time.Minute)},
		{Rel: "a.txt", Change: "deleted", Lastmod: fixedTime.Add(2 * time.Minute)},
	}}
	dir := t.TempDir()
	verifytest.ChangeDump(t, dir, []verifytest.ChangePackage{p1})
	sum, fs := run(t, verify.Options{}, dir)
	if sum.Problems() != 0 || sum.Warnings != 0 || sum.Verified != 1 || sum.Documents != 1 {
		t.Errorf("%+v\n%s", sum, dump(fs))
	}
}

// A dump whose <loc> host is down verifies from its rel="duplicate"
// mirror: remote packages come through the transfer engine, which uses
// every mirror the document names.
func TestVerifyFromDuplicateWhenLocIsDown(t *testing.T) {
	out := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	t.Cleanup(srv.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/rs/"
	l.Close()
	o := pack.Options{BaseURL: verifytest.BaseURL, DumpURL: dead, At: fixedTime,
		Metalink: &pack.MetalinkOptions{Mirrors: []layout.Mirror{{BaseURL: srv.URL + "/", Priority: 1}}}}
	if _, err := pack.Pack(t.Context(), tree(t, exampleFiles(t)), out, o); err != nil {
		t.Fatal(err)
	}
	sum, fs := run(t, verify.Options{Client: client}, srv.URL+"/"+layout.DumpName)
	if sum.Problems() != 0 || sum.Verified != 9 || sum.Packages != 1 {
		t.Fatalf("%+v\n%s", sum, dump(fs))
	}
}
