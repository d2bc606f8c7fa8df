package verify_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/verify"
)

// TestProgressTotal: the total is known before any byte is read, and the
// bytes reported add up to it, for a dump document, a directory, a lone
// package and a package missing from its dump.
func TestProgressTotal(t *testing.T) {
	t.Parallel()
	files := exampleFiles(t)
	for k := range 40 {
		files[filepath.Join("more", string(rune('a'+k%26))+string(rune('a'+k/26))+".txt")] = string(make([]byte, 3000+k))
	}
	out := packDir(t, tree(t, files), pack.Options{MaxPackageSize: 40 << 10})
	zips, _ := filepath.Glob(filepath.Join(out, "*.zip"))
	if len(zips) < 2 {
		t.Fatalf("%d packages, want several", len(zips))
	}
	var size int64
	for _, z := range zips {
		fi, _ := os.Stat(z)
		size += fi.Size()
	}
	missing := t.TempDir()
	for _, f := range []string{layout.DumpName, filepath.Base(zips[0])} {
		b, _ := os.ReadFile(filepath.Join(out, f))
		os.WriteFile(filepath.Join(missing, f), b, 0o644)
	}
	for _, c := range []struct {
		name, target string
		want         int64
	}{
		{"document", filepath.Join(out, layout.DumpName), size},
		{"directory", out, size},
		{"package", zips[0], fileSize(t, zips[0])},
		{"missing packages", filepath.Join(missing, layout.DumpName), size},
	} {
		var total, done atomic.Int64
		var early atomic.Bool
		opts := verify.Options{Events: func(e finding.Event) {
			switch e := e.(type) {
			case finding.Planned:
				total.Add(e.Bytes)
			case finding.Progress:
				early.Store(early.Load() || total.Load() == 0)
				done.Add(e.Bytes)
			}
		}}
		run(t, opts, c.target)
		if total.Load() != c.want || done.Load() != c.want || early.Load() {
			t.Errorf("%s: total %d, done %d, want %d (progress before the total: %v)", c.name, total.Load(), done.Load(), c.want, early.Load())
		}
	}
}

func fileSize(t *testing.T, p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestProgressWithinABitstream: a large file moves the progress while it
// is read, not only once it is done.
func TestProgressWithinABitstream(t *testing.T) {
	t.Parallel()
	big := make([]byte, 8<<20)
	for i := range big {
		big[i] = byte(i * 7 % 251)
	}
	out := packDir(t, tree(t, map[string]string{"big.bin": string(big)}), pack.Options{})
	var calls atomic.Int64
	var done atomic.Int64
	sum, fs := run(t, verify.Options{Events: func(e finding.Event) {
		if p, ok := e.(finding.Progress); ok {
			calls.Add(1)
			done.Add(p.Bytes)
		}
	}}, filepath.Join(out, layout.DumpName))
	if sum.Problems() != 0 || sum.Verified != 1 {
		t.Fatalf("%+v\n%s", sum, dump(fs))
	}
	if calls.Load() < 8 {
		t.Errorf("%d progress calls for an 8 MiB file, want one every chunk read", calls.Load())
	}
}
