package unpack_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
)

func TestRoundTripExample(t *testing.T) {
	t.Parallel()
	src := tree(t, exampleFiles(t))
	out := packDir(t, src, pack.Options{Hashes: []string{digest.MD5, digest.SHA256}})
	dst := filepath.Join(t.TempDir(), "dst")
	res, fs := run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{})
	if res.Problems() != 0 || res.Warnings != 0 || res.Written != 9 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))
	if entries, _ := os.ReadDir(filepath.Join(dst, ".rsdump", "tmp")); len(entries) != 0 {
		t.Errorf("staging files left: %v", entries)
	}
	res, fs = run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{})
	if res.Present != 9 || res.Written != 0 || res.Problems() != 0 {
		t.Errorf("second run: %+v\n%s", res, dump(fs))
	}
}

func TestLayoutPath(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, map[string]string{"a/b.txt": "b", "c.txt": "c"}), pack.Options{})
	m, _ := deststate.NewMapper(deststate.ByPath, "")
	dst := t.TempDir()
	res, fs := run(t, filepath.Join(out, "resourcedump-00001.zip"), dst, unpack.Options{Mapper: m})
	if res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), map[string]string{"resources/a/b.txt": "b", "resources/c.txt": "c"})
}

// TestRoundTrip10000 packs and unpacks ten thousand files in several
// packages, in parallel.
func TestRoundTrip10000(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("10,000 files: skipped with -short")
	}
	files := map[string]string{}
	for i := range 10000 {
		files[fmt.Sprintf("d%02d/s%02d/f%05d.txt", i%37, i%11, i)] = fmt.Sprintf("file %d %s\n", i, string(rune('a'+i%26)))
	}
	src := tree(t, files)
	out := packDir(t, src, pack.Options{MaxEntries: 3000})
	dst := t.TempDir()
	res, fs := run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{})
	if res.Problems() != 0 || res.Written != 10000 || res.Packages != 4 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))
	sum, vfs := verifyTree(t, dst, filepath.Join(out, layout.DumpName))
	if sum.Verified != 10000 || sum.Problems() != 0 {
		t.Errorf("audit: %+v\n%s", sum, dump(vfs))
	}
}
