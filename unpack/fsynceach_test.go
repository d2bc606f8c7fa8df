package unpack_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
)

// TestFsyncEach runs the path of systems without syncfs(2), here: each
// staged file synced on the syncer, each directory that got a new name
// synced after the renames, early writebacks every two files. A dump of
// new directories lands whole, then a Change Dump over it, and nothing
// stays in staging.
func TestFsyncEach(t *testing.T) {
	unpack.SetFsyncEach(t, 2)
	files := map[string]string{}
	for i := range 40 {
		files[fmt.Sprintf("d%d/s%d/f%02d.txt", i%3, i%5, i)] = fmt.Sprintf("file %d\n", i)
	}
	src := tree(t, files)
	out := packDir(t, src, pack.Options{MaxEntries: 15})
	dst := t.TempDir()
	res, fs := run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{})
	if res.Problems() != 0 || res.Written != 40 || res.Packages != 3 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))

	cdst := baseline(t)
	doc := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{pkg1, pkg2})
	if res, fs := run(t, doc, cdst, unpack.Options{}); res.Problems() != 0 || res.Packages != 2 {
		t.Fatalf("Change Dump: %+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree after the Change Dump", contents(readTree(t, cdst)),
		map[string]string{"a.txt": "a2", "c.txt": "c1", "d.txt": "d3", "sub/f.txt": "f1"})
	for _, d := range []string{dst, cdst} {
		if entries, _ := os.ReadDir(filepath.Join(d, ".rsdump", "tmp")); len(entries) != 0 {
			t.Errorf("%s: staging left: %v", d, entries)
		}
	}
}
