package unpack_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
)

func intactZip(t *testing.T) string {
	return writeFile(t, filepath.Join(t.TempDir(), "p.zip"), verifytest.Intact(t))
}

// TestSymlinkOutside puts symbolic links in the destination that point
// outside it, as a directory on a target's path and as a target itself:
// both bitstreams are refused and nothing outside changes.
func TestSymlinkOutside(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	outsideDir := filepath.Join(parent, "outside")
	writeFiles(t, outsideDir, map[string]string{"a.txt": "outside a"})
	dst := filepath.Join(parent, "dst")
	os.MkdirAll(dst, 0o755)
	os.Symlink(outsideDir, filepath.Join(dst, "dir"))
	os.Symlink(filepath.Join(outsideDir, "a.txt"), filepath.Join(dst, "a.txt"))
	before := readTree(t, outsideDir)
	res, fs := run(t, intactZip(t), dst, unpack.Options{Overwrite: true}) // not even told to replace what is there
	for _, p := range []string{"a.txt", "dir/c.txt"} {
		f, ok := find(fs, finding.Error, unpack.CheckTarget, p)
		if !ok || !strings.Contains(f.Msg, p) && !strings.Contains(f.Msg, "symbolic link") {
			t.Errorf("%s not refused:\n%s", p, dump(fs))
		}
	}
	if res.Written != 1 {
		t.Errorf("written %d, want 1 (b.txt)\n%s", res.Written, dump(fs))
	}
	equalMaps(t, "outside", readTree(t, outsideDir), before)
	if fi, err := os.Lstat(filepath.Join(dst, "a.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symbolic link a.txt was replaced")
	}
}

// TestURIOutsideBase: a base URL under which no bitstream of a package
// lies is one error for the run, naming the prefix the manifest uses, not
// a refusal per bitstream; nothing is written.
func TestURIOutsideBase(t *testing.T) {
	t.Parallel()
	m, _ := deststate.NewMapper(deststate.ByURI, "http://other.example/rs/")
	dst := t.TempDir()
	var fs []finding.Finding
	_, err := unpack.Unpack(context.Background(), intactZip(t), dst, unpack.Options{Mapper: m, Events: finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })})
	if !errors.Is(err, unpack.ErrBaseURL) || !strings.Contains(err.Error(), "base URL is http://127.0.0.1/rs/") || !strings.Contains(err.Error(), "http://other.example/rs/") {
		t.Errorf("error %v, want one naming both prefixes", err)
	}
	if _, ok := find(fs, finding.Error, unpack.CheckTarget, ""); ok {
		t.Errorf("a refusal per bitstream:\n%s", dump(fs))
	}
	if got := contents(readTree(t, dst)); len(got) != 0 {
		t.Errorf("files written: %v", got)
	}
}

// TestResyncSiblingBug unpacks a package with the entry names resync
// writes for a sibling of the dumped directory: that bitstream is refused
// with an error naming the entry, the others are extracted, with warnings
// for resync's other habits.
func TestResyncSiblingBug(t *testing.T) {
	t.Parallel()
	files := []verifytest.File{
		{Rel: "a.txt", Data: "in the dumped directory"},
		{Rel: "../notes2/x", Data: "in a sibling", Loc: verifytest.BaseURL + "notes2/x"},
	}
	parent := t.TempDir()
	zp := writeFile(t, filepath.Join(parent, "rd.zip"), verifytest.ResyncPackage(t, files))
	dst := filepath.Join(parent, "dst", "notes")
	os.Mkdir(filepath.Dir(dst), 0o755) // where notes2 would be
	before := listAll(t, parent)
	res, fs := run(t, zp, dst, unpack.Options{})
	f, ok := find(fs, finding.Error, finding.CheckName, "../notes2/x")
	if !ok || !strings.Contains(f.Msg, "leaves the root") { // find matched the entry name in f.Path
		t.Errorf("sibling entry not refused with a clear error:\n%s", dump(fs))
	}
	if _, ok := find(fs, finding.Error, unpack.CheckRefused, "notes2/x"); !ok {
		t.Errorf("no refusal naming the bitstream's target:\n%s", dump(fs))
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), map[string]string{"a.txt": "in the dumped directory"})
	if after := listAll(t, parent); !slices.Equal(outside(after, dst), outside(before, dst)) {
		t.Errorf("files appeared outside the destination: %v", after)
	}
	if res.Warnings == 0 {
		t.Errorf("no warning for resync's relative paths and missing at")
	}
}

// TestResyncPeer unpacks the dump resync itself wrote.
func TestResyncPeer(t *testing.T) {
	t.Parallel()
	doc := filepath.Join("..", "..", "shared", "peers", "resync", "rd-cli", "resourcedump.xml")
	if _, err := os.Stat(doc); err != nil {
		t.Skipf("resync peer dump not found at %s: ../shared is missing", doc)
	}
	dst := t.TempDir()
	// By the manifests' paths: resync's URIs are under its own base URL,
	// a host name no test uses.
	m, err := deststate.NewMapper(deststate.ByPath, "")
	if err != nil {
		t.Fatal(err)
	}
	res, fs := run(t, doc, dst, unpack.Options{Mapper: m})
	if res.Problems() != 0 || res.Written != 8 || res.Warnings == 0 {
		t.Errorf("%+v\n%s", res, dump(fs))
	}
	got := contents(readTree(t, dst))
	if got["notes2/sibling.txt"] == "" || len(got["data/random-5MiB.bin"]) != 5<<20 || got["docs/with space ünï cödé ☃.txt"] == "" {
		t.Errorf("tree: %d files, %v", len(got), keys(got))
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestDryRun(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, exampleFiles(t)), pack.Options{})
	dst := filepath.Join(t.TempDir(), "not-yet")
	res, fs := run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{DryRun: true})
	if res.Written != 9 || res.Problems() != 0 {
		t.Errorf("%+v\n%s", res, dump(fs))
	}
	if _, err := os.Stat(dst); err == nil {
		t.Errorf("dry run created %s", dst)
	}
	run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{})
	os.WriteFile(filepath.Join(dst, "notes", "a.txt"), []byte("changed"), 0o644)
	before := readTree(t, dst)
	res, _ = run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{DryRun: true})
	if res.Written != 1 || res.Present != 8 {
		t.Errorf("dry run over a tree: %+v", res)
	}
	equalMaps(t, "tree after a dry run", readTree(t, dst), before)
}

// TestURIOutsideBaseNested: when every file lies deep below the base
// URL, the error gives the Source's base URL, not the longest common
// prefix of the URIs, which would restore the files one level too high.
func TestURIOutsideBaseNested(t *testing.T) {
	t.Parallel()
	z, _ := verifytest.Package(t, []verifytest.File{{Rel: "a/b/run.sh", Data: "#!/bin/sh\n"}, {Rel: "a/b/c.txt", Data: "c"}})
	p := filepath.Join(t.TempDir(), "p.zip")
	os.WriteFile(p, z, 0o644)
	m, _ := deststate.NewMapper(deststate.ByURI, "http://other.example/rs/")
	_, err := unpack.Unpack(context.Background(), p, t.TempDir(), unpack.Options{Mapper: m})
	if !errors.Is(err, unpack.ErrBaseURL) || !strings.Contains(err.Error(), "base URL is "+verifytest.BaseURL+" ") && !strings.HasSuffix(err.Error(), "base URL is "+verifytest.BaseURL) {
		t.Errorf("error %v, want one giving %s", err, verifytest.BaseURL)
	}
}
