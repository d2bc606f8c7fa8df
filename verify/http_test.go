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
	"github.com/rsdump/rsdump/resourcesync"
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
	t.Parallel()
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
	t.Parallel()
	z := verifytest.Intact(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(z) }))
	defer srv.Close()
	sum, fs := run(t, verify.Options{Client: client}, srv.URL+"/p.zip")
	if sum.Problems() != 0 || sum.Packages != 1 || sum.Verified == 0 {
		t.Errorf("%+v\n%s", sum, dump(fs))
	}
}

func TestVerifyChangeDump(t *testing.T) {
	t.Parallel()
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

// TestVerifyWindowContradicted: a Change Dump whose document gives a
// package another from or until than the package's own manifest is not
// the package's: verify reports it, naming both, as unpack and sync
// refuse it (pkgread.PackageRef.CheckWindow).
func TestVerifyWindowContradicted(t *testing.T) {
	t.Parallel()
	p1 := verifytest.ChangePackage{From: fixedTime, Until: fixedTime.Add(time.Hour), Changes: []verifytest.File{
		{Rel: "a.txt", Data: "a", Change: "created", Lastmod: fixedTime.Add(time.Minute)},
	}}
	for _, attr := range []string{"from", "until"} {
		dir := t.TempDir()
		doc := verifytest.ChangeDump(t, dir, []verifytest.ChangePackage{p1})
		h, urls := verifytest.ReadDoc(t, doc)
		lie := fixedTime.Add(30 * time.Minute)
		if attr == "from" {
			urls[0].MD.From, h.MD.From = lie, lie
		} else {
			urls[0].MD.Until, h.MD.Until = lie, lie
		}
		verifytest.WriteDoc(t, doc, h, urls)
		sum, fs := run(t, verify.Options{}, doc)
		f, ok := find(fs, finding.Error, finding.CheckWindow)
		if !ok || sum.Problems() == 0 || f.Expected != attr+" "+resourcesync.FormatTime(lie) || !strings.Contains(f.Msg, verifytest.ChangeDumpName) {
			t.Errorf("%s contradicted: %+v\n%s", attr, sum, dump(fs))
		}
	}
}

// A dump whose <loc> host is down verifies from its rel="duplicate"
// mirror: remote packages come through the transfer engine, which uses
// every mirror the document names.
func TestVerifyFromDuplicateWhenLocIsDown(t *testing.T) {
	t.Parallel()
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
