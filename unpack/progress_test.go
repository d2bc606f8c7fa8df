package unpack_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
)

// TestProgressTotal: unpack announces the packages' bytes before reading
// any, and the bytes it reports add up to them, on a first run and on a
// second one that finds everything present.
func TestProgressTotal(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, manyFiles(60, 3000)), pack.Options{MaxPackageSize: 40 << 10})
	zips, _ := filepath.Glob(filepath.Join(out, "*.zip"))
	var size int64
	for _, z := range zips {
		fi, _ := os.Stat(z)
		size += fi.Size()
	}
	if len(zips) < 2 {
		t.Fatalf("%d packages, want several", len(zips))
	}
	dst := t.TempDir()
	for _, src := range []string{filepath.Join(out, layout.DumpName), filepath.Join(out, layout.DumpName), zips[0]} {
		var total, done atomic.Int64
		var early atomic.Bool
		o := unpack.Options{Events: func(e finding.Event) {
			switch e := e.(type) {
			case finding.Planned:
				total.Add(e.Bytes)
			case finding.Progress:
				early.Store(early.Load() || total.Load() == 0)
				done.Add(e.Bytes)
			}
		}}
		run(t, src, dst, o)
		want := size
		if src == zips[0] {
			fi, _ := os.Stat(zips[0])
			want = fi.Size()
		}
		if total.Load() != want || done.Load() != want || early.Load() {
			t.Errorf("%s: total %d, done %d, want %d (progress before the total: %v)", src, total.Load(), done.Load(), want, early.Load())
		}
	}
}

// TestProgressStoppedChain: when a Change Dump's first package fails, the
// packages staged ahead of it are not applied, and their bytes, counted
// while they staged, are counted once: the progress adds up to the total.
func TestProgressStoppedChain(t *testing.T) {
	t.Parallel()
	dst := baseline(t)
	dir := t.TempDir()
	doc := verifytest.ChangeDump(t, dir, []verifytest.ChangePackage{pkg1, pkg2, pkg3})
	z := filepath.Join(dir, "changedump-00001.zip")
	b, err := os.ReadFile(z)
	if err != nil {
		t.Fatal(err)
	}
	b[40] ^= 1 // inside the first entry: the package's hash differs from the document's
	writeFile(t, z, b)
	var total, done atomic.Int64
	res, fs := run(t, doc, dst, unpack.Options{Jobs: 4, Events: func(e finding.Event) {
		switch e := e.(type) {
		case finding.Planned:
			total.Add(e.Bytes)
		case finding.Progress:
			done.Add(e.Bytes)
		}
	}})
	if res.Problems() == 0 {
		t.Fatalf("the damaged package was applied: %+v\n%s", res, dump(fs))
	}
	if done.Load() != total.Load() {
		t.Errorf("progress %d, total %d: want them equal", done.Load(), total.Load())
	}
}
