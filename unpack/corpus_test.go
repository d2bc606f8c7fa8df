package unpack_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/unpack"
)

// oldFiles is what the destination holds before each broken package is
// unpacked: every target exists with other content, so that a bitstream
// refused must leave it as it was.
func oldFiles() map[string]string {
	m := map[string]string{"evil.txt": "old evil", "bomb.bin": "old bomb", "zeros.bin": "old zeros", "a2.txt": "old a2"}
	for _, f := range verifytest.BaseFiles {
		m[f.Rel] = "old " + f.Rel
	}
	return m
}

// TestBrokenCorpus unpacks every damaged package into a tree holding older
// versions of its files, and checks that exactly the bitstreams that
// verified were written, the others left untouched, and nothing written
// outside the tree.
func TestBrokenCorpus(t *testing.T) {
	t.Parallel()
	for _, c := range verifytest.Corpus(t) {
		for _, atomic := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/atomic=%v", c.Name, atomic), func(t *testing.T) {
				checkBroken(t, c, atomic)
			})
		}
	}
}

func checkBroken(t *testing.T, c verifytest.Case, atomic bool) {
	parent := t.TempDir()
	zp := writeFile(t, filepath.Join(parent, "in", "p.zip"), c.Zip)
	dst := filepath.Join(parent, "dst")
	writeFiles(t, dst, oldFiles())
	before := listAll(t, parent)
	// The older versions were never written by rsdump: they are to be
	// replaced, by what verifies only (--overwrite).
	res, fs := run(t, zp, dst, unpack.Options{AtomicPackage: atomic, Overwrite: true, Limits: pkgread.Limits{MaxRatio: c.MaxRatio}})
	if res.Problems() == 0 {
		t.Errorf("no problem reported:\n%s", dump(fs))
	}
	want := oldFiles()
	committed := c.Committed
	if atomic {
		committed = nil
	}
	for _, rel := range committed {
		want[rel] = c.Data(rel)
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), want)
	if after := listAll(t, parent); !slices.Equal(outside(after, dst), outside(before, dst)) {
		t.Errorf("files appeared outside the destination:\n%v\n%v", before, after)
	}
	if entries, _ := os.ReadDir(filepath.Join(dst, ".rsdump", "tmp")); len(entries) != 0 {
		t.Errorf("staging files left: %v", entries)
	}
	if res.Written != len(committed) {
		t.Errorf("written %d, want %d\n%s", res.Written, len(committed), dump(fs))
	}
}

// outside keeps the paths not under dst.
func outside(paths []string, dst string) []string {
	var out []string
	for _, p := range paths {
		if rel, err := filepath.Rel(dst, p); err != nil || rel == ".." || len(rel) > 2 && rel[:3] == "../" {
			out = append(out, p)
		}
	}
	return out
}
