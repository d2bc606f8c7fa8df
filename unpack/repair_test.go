package unpack_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc/httpctest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
)

// repairFiles are the files of the repair tests: each is damaged a
// different way.
var repairFiles = map[string]string{
	"flipped.txt":      "a byte of this file is flipped, its mtime moves",
	"gone/missing.txt": "this file is deleted",
	"short.txt":        "this file is cut short, to half its length",
	"touched.txt":      "only this file's mtime moves",
	"sneaky.txt":       "a byte flipped, the mtime put back: only a hash shows it",
	"kept/intact.txt":  "this file is left alone",
}

// damagedTree unpacks the packed dump at doc into a new directory and
// damages it; it returns the directory and the mtime rsdump gave
// touched.txt.
func damagedTree(t *testing.T, doc string, m deststate.Mapper) (string, time.Time) {
	t.Helper()
	dst := t.TempDir()
	if res, fs := run(t, doc, dst, unpack.Options{Mapper: m}); res.Problems() != 0 {
		t.Fatalf("unpack: %+v\n%s", res, dump(fs))
	}
	fi, err := os.Stat(filepath.Join(dst, "touched.txt"))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(rel string, keepMtime bool) {
		p := filepath.Join(dst, rel)
		old, _ := os.Stat(p)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[3] ^= 0x20
		writeFile(t, p, b)
		later := old.ModTime().Add(time.Hour)
		if keepMtime {
			later = old.ModTime()
		}
		os.Chtimes(p, later, later)
	}
	flip("flipped.txt", false)
	flip("sneaky.txt", true)
	os.Remove(filepath.Join(dst, "gone", "missing.txt"))
	os.Truncate(filepath.Join(dst, "short.txt"), int64(len(repairFiles["short.txt"])/2))
	later := fi.ModTime().Add(-time.Hour)
	os.Chtimes(filepath.Join(dst, "touched.txt"), later, later)
	return dst, fi.ModTime()
}

func repair(t *testing.T, dst string, ro unpack.RepairOptions, opts unpack.Options) (*unpack.RepairResult, []finding.Finding) {
	t.Helper()
	var fs []finding.Finding
	opts.Events = finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })
	if opts.Mapper == (deststate.Mapper{}) {
		opts.Mapper = mapper(t)
	}
	res, err := unpack.Repair(context.Background(), dst, ro, opts)
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	return res, fs
}

// TestRepairFromLocalDump: the cheap check finds the files whose length
// or mtime is not what rsdump gave them, restores the three damaged from
// the dump's package, gives the touched one its mtime back without
// counting it damaged, and misses the one damaged under its own mtime;
// HashAll finds that one too. The tree is then the Source's, mtimes
// included.
func TestRepairFromLocalDump(t *testing.T) {
	t.Parallel()
	src := tree(t, repairFiles)
	doc := filepath.Join(packDir(t, src, pack.Options{}), "resourcedump.xml")
	dst, mtime := damagedTree(t, doc, mapper(t))

	res, fs := repair(t, dst, unpack.RepairOptions{Dumps: []string{doc}}, unpack.Options{})
	if res.Checked != 6 || res.Damaged != 3 || res.Repaired != 3 || len(res.Unrepaired) != 0 || res.Problems() != 0 {
		t.Fatalf("cheap check: %+v\n%s", res, dump(fs))
	}
	if res.Fetched != 0 {
		t.Errorf("a local package: %d bytes fetched, want 0", res.Fetched)
	}
	if fi, _ := os.Stat(filepath.Join(dst, "touched.txt")); !fi.ModTime().Equal(mtime) {
		t.Errorf("touched.txt: mtime %s, want %s back", fi.ModTime(), mtime)
	}
	if got := contents(readTree(t, dst)); got["sneaky.txt"] == repairFiles["sneaky.txt"] {
		t.Fatalf("the cheap check read sneaky.txt, whose length and mtime are right")
	}

	res, fs = repair(t, dst, unpack.RepairOptions{Dumps: []string{doc}, HashAll: true}, unpack.Options{})
	if res.Checked != 6 || res.Damaged != 1 || res.Repaired != 1 || res.Problems() != 0 {
		t.Fatalf("HashAll: %+v\n%s", res, dump(fs))
	}
	equalMaps(t, "repaired tree", readTree(t, dst), readTree(t, src))

	res, fs = repair(t, dst, unpack.RepairOptions{Dumps: []string{doc}, HashAll: true}, unpack.Options{})
	if res.Damaged != 0 || res.Repaired != 0 || res.Problems() != 0 {
		t.Errorf("an intact tree: %+v\n%s", res, dump(fs))
	}
}

// TestRepairDryRun: a dry run finds the damage and says it can repair it,
// and changes nothing.
func TestRepairDryRun(t *testing.T) {
	t.Parallel()
	src := tree(t, repairFiles)
	doc := filepath.Join(packDir(t, src, pack.Options{}), "resourcedump.xml")
	dst, _ := damagedTree(t, doc, mapper(t))
	before := readTree(t, dst)
	res, fs := repair(t, dst, unpack.RepairOptions{Dumps: []string{doc}, HashAll: true}, unpack.Options{DryRun: true})
	if res.Damaged != 4 || len(res.Unrepaired) != 0 || res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree after a dry run", readTree(t, dst), before)
}

// TestRepairUnrepaired: with no document that carries the versions rsdump
// wrote, the damaged files are handed back as Unrepaired, and Unrepaired
// reports each still damaged as an error naming it; a file put back by
// hand is no longer reported.
func TestRepairUnrepaired(t *testing.T) {
	t.Parallel()
	src := tree(t, repairFiles)
	doc := filepath.Join(packDir(t, src, pack.Options{}), "resourcedump.xml")
	dst, _ := damagedTree(t, doc, mapper(t))
	res, fs := repair(t, dst, unpack.RepairOptions{}, unpack.Options{})
	if res.Damaged != 3 || res.Repaired != 0 || len(res.Unrepaired) != 3 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	os.Remove(filepath.Join(dst, "short.txt"))
	writeFile(t, filepath.Join(dst, "short.txt"), []byte(repairFiles["short.txt"]))

	fs = nil
	opts := unpack.Options{Mapper: mapper(t), Events: finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })}
	n, err := unpack.Unrepaired(context.Background(), dst, res.Unrepaired, opts)
	if err != nil || n != 2 {
		t.Fatalf("Unrepaired: %d, %v, want 2\n%s", n, err, dump(fs))
	}
	for _, p := range []string{"flipped.txt", "gone/missing.txt"} {
		if f, ok := find(fs, finding.Error, unpack.CheckDamaged, p); !ok || !strings.Contains(f.Msg, "not repaired") {
			t.Errorf("no error names %s\n%s", p, dump(fs))
		}
	}
	if _, ok := find(fs, finding.Error, unpack.CheckDamaged, "short.txt"); ok {
		t.Errorf("short.txt, put back by hand, reported\n%s", dump(fs))
	}
}

// TestRepairFromList: with no dump, a damaged file is fetched from its URI
// as the Resource List names it, and only that file is fetched.
func TestRepairFromList(t *testing.T) {
	t.Parallel()
	src := tree(t, repairFiles)
	var requests atomic.Int64
	files := http.StripPrefix("/rs/", http.FileServer(http.Dir(src)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/rs/gone/missing.txt" {
			http.Error(w, "not this one", http.StatusForbidden)
			return
		}
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	m, err := deststate.NewMapper(deststate.ByURI, srv.URL+"/rs/")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := pack.Pack(context.Background(), src, out, pack.Options{BaseURL: srv.URL + "/rs/", At: fixedTime}); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if res, fs := run(t, filepath.Join(out, "resourcedump.xml"), dst, unpack.Options{Mapper: m}); res.Problems() != 0 {
		t.Fatalf("unpack: %+v\n%s", res, dump(fs))
	}
	os.Remove(filepath.Join(dst, "gone", "missing.txt"))
	res, fs := repair(t, dst, unpack.RepairOptions{Lists: []string{filepath.Join(out, "resourcelist.xml")}}, unpack.Options{Mapper: m})
	if res.Damaged != 1 || res.Repaired != 1 || res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	if want := int64(len(repairFiles["gone/missing.txt"])); res.Fetched != want || requests.Load() != 1 {
		t.Errorf("fetched %d bytes in %d requests, want %d in 1", res.Fetched, requests.Load(), want)
	}
	equalMaps(t, "repaired tree", readTree(t, dst), readTree(t, src))
}

// TestRepairCountsEveryByte: what a repair reports fetched is every body
// byte the Source served it: the dump document, the detached manifest,
// the package's ranges; not the package's bytes alone.
func TestRepairCountsEveryByte(t *testing.T) {
	t.Parallel()
	src := tree(t, repairFiles)
	out := t.TempDir()
	var served atomic.Int64
	srv := httptest.NewServer(httpctest.Counting(http.FileServer(http.Dir(out)), "", &served))
	defer srv.Close()
	if _, err := pack.Pack(context.Background(), src, out, pack.Options{BaseURL: verifytest.BaseURL, DumpURL: srv.URL + "/", At: fixedTime}); err != nil {
		t.Fatal(err)
	}
	doc := srv.URL + "/" + layout.DumpName
	dst, _ := damagedTree(t, doc, mapper(t))
	before := served.Load()
	res, fs := repair(t, dst, unpack.RepairOptions{Dumps: []string{doc}}, unpack.Options{}) // rsdump's client, which counts
	if res.Repaired != 3 || res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	manifest, _ := os.Stat(filepath.Join(out, "resourcedump-00001.manifest.xml"))
	if got := served.Load() - before; res.Fetched != got || got <= manifest.Size() {
		t.Errorf("reported %d bytes fetched; the Source served %d (the detached manifest alone is %d)", res.Fetched, got, manifest.Size())
	}
}
