package unpack_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
)

// TestProgressTotal: unpack announces the packages' bytes before reading
// any, and the bytes it reports add up to them, on a first run and on a
// second one that finds everything present.
func TestProgressTotal(t *testing.T) {
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
	for _, src := range []string{filepath.Join(out, pack.DumpName), filepath.Join(out, pack.DumpName), zips[0]} {
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
