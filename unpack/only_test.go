package unpack_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc/httpctest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
)

// TestOnly: --only restores the files it picks from a remote dump, each
// read from inside its package by ranges, not the packages: a small share
// of their bytes is served, nothing else lands, the state does not claim
// the snapshot, and a bad pattern is refused.
func TestOnly(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 30 {
		b := make([]byte, 20000)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		files[fmt.Sprintf("d%d/f%02d.bin", i%3, i)] = string(b)
	}
	src := tree(t, files)
	out := t.TempDir()
	var zipBytes atomic.Int64
	srv := httptest.NewServer(httpctest.Counting(http.FileServer(http.Dir(out)), ".zip", &zipBytes))
	defer srv.Close()
	o := pack.Options{BaseURL: "http://127.0.0.1/rs/", At: fixedTime, DumpURL: srv.URL + "/", Compress: pack.Store, MaxPackageSize: 250000}
	if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	m, _ := deststate.NewMapper(deststate.ByURI, "http://127.0.0.1/rs/")
	dst := t.TempDir()
	res, fs := run(t, srv.URL+"/"+layout.DumpName, dst, unpack.Options{Mapper: m, Client: srv.Client(), Only: []string{"d1", "d2/f02.bin"}})
	want := map[string]string{"d2/f02.bin": files["d2/f02.bin"]}
	for rel, data := range files {
		if strings.HasPrefix(rel, "d1/") {
			want[rel] = data
		}
	}
	if res.Problems() != 0 || res.Written != len(want) {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), want)
	if n := zipBytes.Load(); n > int64(len(want))*20000*12/10 {
		t.Errorf("%d package bytes served for %d files of 20,000 bytes", n, len(want))
	}
	t.Logf("%d files restored: %d package bytes served of %d", len(want), zipBytes.Load(), 30*20000)
	if s := readState(t, dst); !s.Since().IsZero() || s.Pending {
		t.Errorf("state after a partial restore: %+v", s)
	}
	_, err := unpack.Unpack(context.Background(), srv.URL+"/"+layout.DumpName, t.TempDir(), unpack.Options{Mapper: m, Only: []string{"d["}})
	if err == nil || !strings.Contains(err.Error(), `"d["`) {
		t.Errorf("bad pattern: %v", err)
	}
}

// TestOnlyMatchesNothing: --only patterns that pick no file of the dump
// are an error saying so, naming them, and nothing lands.
func TestOnlyMatchesNothing(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, map[string]string{"a/x.txt": "x", "b/y.txt": "y"}), pack.Options{})
	m, _ := deststate.NewMapper(deststate.ByURI, verifytest.BaseURL)
	dst := t.TempDir()
	res, fs := run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{Mapper: m, Only: []string{"c", "a/z*"}})
	f, ok := find(fs, finding.Error, unpack.CheckOnly, "")
	if !ok || res.Problems() != 1 || res.Written != 0 || !strings.Contains(f.Msg, `"c", "a/z*"`) {
		t.Errorf("%+v\n%s", res, dump(fs))
	}
	res, fs = run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{Mapper: m, Only: []string{"c", "a"}})
	if _, ok := find(fs, finding.Error, unpack.CheckOnly, ""); ok || res.Written != 1 {
		t.Errorf("one pattern matching: %+v\n%s", res, dump(fs))
	}
}
