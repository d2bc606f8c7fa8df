package unpack_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// findMsg returns the first finding of check whose message holds every
// one of parts.
func findMsg(fs []finding.Finding, check string, parts ...string) (finding.Finding, bool) {
	for _, f := range fs {
		if f.Code != check {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(f.Msg, p)
		}
		if ok {
			return f, true
		}
	}
	return finding.Finding{}, false
}

var baselineTree = map[string]string{"a.txt": "a1", "b.txt": "b1", "c.txt": "c1"}

// TestChangeDumpGap: a Change Dump that starts after the tree's snapshot
// is refused, naming both times, and nothing is written; --allow-gap
// applies it and says so.
func TestChangeDumpGap(t *testing.T) {
	t.Parallel()
	late := pkg2 // from 2:00, the baseline is at 0:00
	doc := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{late, pkg3})
	dst := baseline(t)
	before := readTree(t, dst)
	res, fs := run(t, doc, dst, unpack.Options{})
	f, ok := findMsg(fs, unpack.CheckGap, resourcesync.FormatTime(fixedTime), resourcesync.FormatTime(at(2, 0)), "changedump-00001.zip")
	if !ok || f.Severity != finding.Error || res.Errors == 0 || res.Written+res.Deleted != 0 {
		t.Fatalf("gap not an error naming both times: %+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree after a refused gap", readTree(t, dst), before)
	if s := readState(t, dst); !s.ChangeDumpUntil.IsZero() || !s.ResourceDumpAt.Equal(fixedTime) || s.Pending {
		t.Errorf("state moved: %+v", s)
	}

	res, fs = run(t, doc, dst, unpack.Options{AllowGap: true})
	f, ok = findMsg(fs, unpack.CheckGap, "--allow-gap", resourcesync.FormatTime(at(2, 0)))
	if !ok || f.Severity != finding.Warning || res.Problems() != 0 || res.Packages != 2 {
		t.Fatalf("--allow-gap: %+v, gap finding %+v\n%s", res, f, dump(fs))
	}
	if s := readState(t, dst); !s.ChangeDumpUntil.Equal(at(4, 0)) {
		t.Errorf("state after --allow-gap: %+v, want until %s", s, at(4, 0))
	}
}

// TestChangeDumpNoBaseline: a Change Dump into a tree with no state is
// refused; --allow-gap applies it.
func TestChangeDumpNoBaseline(t *testing.T) {
	t.Parallel()
	doc := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{pkg1})
	dst := t.TempDir()
	res, fs := run(t, doc, dst, unpack.Options{})
	if _, ok := findMsg(fs, unpack.CheckGap, "no baseline", "changedump-00001.zip"); !ok || res.Written != 0 {
		t.Fatalf("no baseline not refused: %+v\n%s", res, dump(fs))
	}
	if got := readTree(t, dst); len(got) != 0 {
		t.Errorf("files written into a tree with no baseline: %v", got)
	}
	res, fs = run(t, doc, dst, unpack.Options{AllowGap: true})
	if res.Problems() != 0 || res.Written != 2 {
		t.Fatalf("--allow-gap: %+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), map[string]string{"a.txt": "a2", "d.txt": "d1"})
}

// TestChangeDumpChain: packages that overlap, come out of order or leave a
// gap between them are errors naming them, and nothing is applied.
func TestChangeDumpChain(t *testing.T) {
	t.Parallel()
	overlap := pkg2
	overlap.From = at(1, 30) // pkg1 ends at 2:00
	cases := []struct {
		name  string
		pkgs  []verifytest.ChangePackage
		check string
		parts []string
	}{
		{"overlap", []verifytest.ChangePackage{pkg1, overlap}, finding.CheckOrder,
			[]string{"overlap", "changedump-00002.zip", "changedump-00001.zip", resourcesync.FormatTime(at(1, 30)), resourcesync.FormatTime(at(2, 0))}},
		{"order", []verifytest.ChangePackage{pkg1, pkg3, pkg2}, finding.CheckOrder,
			[]string{"out of order", "changedump-00003.zip", "changedump-00002.zip"}},
		{"gap", []verifytest.ChangePackage{pkg1, pkg3}, unpack.CheckGap,
			[]string{"changedump-00001.zip", "changedump-00002.zip", resourcesync.FormatTime(at(2, 0)), resourcesync.FormatTime(at(3, 0))}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := verifytest.ChangeDump(t, t.TempDir(), c.pkgs)
			dst := baseline(t)
			before := readTree(t, dst)
			res, fs := run(t, doc, dst, unpack.Options{})
			if f, ok := findMsg(fs, c.check, c.parts...); !ok || f.Severity != finding.Error {
				t.Errorf("no %s error naming %q: %+v\n%s", c.check, c.parts, res, dump(fs))
			}
			if res.Packages != 0 {
				t.Errorf("%d packages opened", res.Packages)
			}
			equalMaps(t, "tree", readTree(t, dst), before)
			if s := readState(t, dst); !s.ChangeDumpUntil.IsZero() {
				t.Errorf("state moved: %+v", s)
			}
		})
	}
}

// fileIDs records each file's identity (fileID): a file rewritten,
// renamed over, or touched changes it.
func fileIDs(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for rel := range readTree(t, dir) {
		id, err := fileID(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		out[rel] = id
	}
	return out
}

// TestChangeDumpTwice: the second application of a Change Dump reports
// every package skipped and touches no file, not even its mtime.
func TestChangeDumpTwice(t *testing.T) {
	t.Parallel()
	dst := baseline(t)
	doc := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{pkg1, pkg2, pkg3})
	if res, fs := run(t, doc, dst, unpack.Options{}); res.Packages != 3 || res.Problems() != 0 {
		t.Fatalf("first run: %+v\n%s", res, dump(fs))
	}
	tree, ids, state := readTree(t, dst), fileIDs(t, dst), readState(t, dst)
	res, fs := run(t, doc, dst, unpack.Options{})
	if res.Packages != 0 || res.Written+res.Present+res.Deleted+res.Refused != 0 || res.Problems() != 0 {
		t.Errorf("second run did something: %+v\n%s", res, dump(fs))
	}
	skipped := 0
	for _, f := range fs {
		if f.Code == unpack.CheckSkipped && f.Severity == finding.OK {
			skipped++
		}
	}
	if skipped != 3 {
		t.Errorf("%d packages reported skipped, want 3", skipped)
	}
	equalMaps(t, "tree", readTree(t, dst), tree)
	equalMaps(t, "inodes and ctimes", fileIDs(t, dst), ids)
	if s := readState(t, dst); s != state {
		t.Errorf("state %+v, was %+v", s, state)
	}
}

// TestChangeDumpOldLastmod: a package that continues from the state is
// applied whole, even changes whose lastmod is older than the state: a
// renamed file keeps its mtime, which sources give as lastmod.
func TestChangeDumpOldLastmod(t *testing.T) {
	t.Parallel()
	renamed := verifytest.ChangePackage{From: fixedTime, Until: at(1, 0), Changes: []verifytest.File{
		change(resourcesync.ChangeCreated, "moved/b.txt", "b1", fixedTime.Add(-24*time.Hour)),
		change(resourcesync.ChangeDeleted, "b.txt", "", at(0, 30)),
	}}
	dst := baseline(t)
	doc := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{renamed})
	res, fs := run(t, doc, dst, unpack.Options{})
	if res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), map[string]string{"a.txt": "a1", "moved/b.txt": "b1", "c.txt": "c1"})
}

// TestChangeDumpStraddles: a package that starts before the state's until
// and ends after it (the Source cut its packages differently) is applied
// whole, and the tree ends as the Source's.
func TestChangeDumpStraddles(t *testing.T) {
	t.Parallel()
	dst := baseline(t)
	run(t, verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{pkg1}), dst, unpack.Options{})
	recut := verifytest.ChangePackage{From: at(1, 0), Until: at(3, 0), Changes: append(append([]verifytest.File{}, pkg1.Changes...), pkg2.Changes...)}
	res, fs := run(t, verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{recut}), dst, unpack.Options{})
	if res.Problems() != 0 || res.Packages != 1 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), map[string]string{"a.txt": "a2", "c.txt": "c1", "d.txt": "d3", "sub/f.txt": "f1"})
	if s := readState(t, dst); !s.ChangeDumpUntil.Equal(at(3, 0)) {
		t.Errorf("state %+v", s)
	}
}

// TestChangePackageGap: a Change Dump package given on its own is checked
// against the state by its manifest's from.
func TestChangePackageGap(t *testing.T) {
	t.Parallel()
	dst := baseline(t)
	z, _ := verifytest.ChangeZip(t, pkg2)
	zp := writeFile(t, filepath.Join(t.TempDir(), "p2.zip"), z)
	res, fs := run(t, zp, dst, unpack.Options{})
	if _, ok := findMsg(fs, unpack.CheckGap, resourcesync.FormatTime(fixedTime), resourcesync.FormatTime(at(2, 0))); !ok || res.Written != 0 {
		t.Fatalf("gap of a lone package not refused: %+v\n%s", res, dump(fs))
	}
	z, _ = verifytest.ChangeZip(t, pkg1)
	zp = writeFile(t, filepath.Join(t.TempDir(), "p1.zip"), z)
	if res, fs := run(t, zp, dst, unpack.Options{}); res.Problems() != 0 || res.Written != 2 {
		t.Fatalf("lone package that continues: %+v\n%s", res, dump(fs))
	}
	if s := readState(t, dst); !s.ChangeDumpUntil.Equal(at(2, 0)) {
		t.Errorf("state %+v", s)
	}
}

// TestChangeDumpDryRun: a dry run of several packages follows the state a
// real run would reach: no gap between its packages, nothing written.
func TestChangeDumpDryRun(t *testing.T) {
	t.Parallel()
	dst := baseline(t)
	before := readTree(t, dst)
	doc := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{pkg1, pkg2, pkg3})
	res, fs := run(t, doc, dst, unpack.Options{DryRun: true})
	if res.Problems() != 0 || res.Packages != 3 || res.Written == 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), before)
}

// TestUnpackOutdir: a directory with a Resource Dump and a Change Dump
// gets the snapshot then the changes; run again, it writes nothing, and
// the Resource Dump is not applied over the newer tree.
func TestUnpackOutdir(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, baselineTree), pack.Options{})
	verifytest.ChangeDump(t, out, []verifytest.ChangePackage{pkg1, pkg2})
	dst := t.TempDir()
	if res, fs := run(t, out, dst, unpack.Options{}); res.Problems() != 0 || res.Packages != 3 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	want := map[string]string{"a.txt": "a2", "c.txt": "c1", "d.txt": "d3", "sub/f.txt": "f1"}
	equalMaps(t, "tree", contents(readTree(t, dst)), want)
	ids := fileIDs(t, dst)
	res, fs := run(t, out, dst, unpack.Options{})
	if res.Packages != 0 || res.Written+res.Present+res.Deleted != 0 || res.Problems() != 0 {
		t.Errorf("second run: %+v\n%s", res, dump(fs))
	}
	if _, ok := findMsg(fs, unpack.CheckSkipped, "Resource Dump", "not applied"); !ok {
		t.Errorf("Resource Dump not reported skipped:\n%v", fs)
	}
	equalMaps(t, "inodes and ctimes", fileIDs(t, dst), ids)
}

// TestDeletionPrunesEmptyDirs: a directory a deletion leaves empty goes
// with its last file, as at the Source; one still holding a file stays.
func TestDeletionPrunesEmptyDirs(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, map[string]string{"x/y/z.txt": "z", "x/keep.txt": "k", "w/v.txt": "v"}), pack.Options{})
	dst := t.TempDir()
	run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{})
	writeFile(t, filepath.Join(dst, "w", "local.txt"), []byte("kept: not from the Source"))
	p := verifytest.ChangePackage{From: fixedTime, Until: at(1, 0), Changes: []verifytest.File{
		change(resourcesync.ChangeDeleted, "x/y/z.txt", "", at(0, 10)),
		change(resourcesync.ChangeDeleted, "w/v.txt", "", at(0, 20)),
	}}
	if res, fs := run(t, verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{p}), dst, unpack.Options{}); res.Problems() != 0 || res.Deleted != 2 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	for rel, want := range map[string]bool{"x/y": false, "x": true, "w": true} {
		if _, err := os.Stat(filepath.Join(dst, rel)); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", rel, err == nil, want)
		}
	}
	p = verifytest.ChangePackage{From: at(1, 0), Until: at(2, 0), Changes: []verifytest.File{
		change(resourcesync.ChangeDeleted, "x/keep.txt", "", at(1, 10)),
	}}
	run(t, verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{p}), dst, unpack.Options{})
	if _, err := os.Stat(filepath.Join(dst, "x")); err == nil {
		t.Errorf("x, emptied, still there")
	}
}

// TestChangeDumpStagedAheadDiscarded: the package after the one
// committing is staged at the same time, but applied only once the one
// before it has succeeded. When that one fails (here pkg2, whose package
// no longer matches its hash in changedump.xml), nothing of the package
// staged ahead reaches the tree, the state stays at the last package
// applied, and its staging directory is removed. A rerun with the damage
// repaired applies both, in order.
func TestChangeDumpStagedAheadDiscarded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := verifytest.ChangeDump(t, dir, []verifytest.ChangePackage{pkg1, pkg2, pkg3})
	zip := filepath.Join(dir, "changedump-00002.zip")
	good, err := os.ReadFile(zip)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(good)
	bad[len(bad)-30] ^= 0xff // a byte of its central directory: neither its hash nor its layout holds
	writeFile(t, zip, bad)
	dst := baseline(t)
	res, fs := run(t, doc, dst, unpack.Options{})
	if res.Problems() == 0 {
		t.Fatalf("a damaged package went unnoticed: %+v\n%s", res, dump(fs))
	}
	afterPkg1 := map[string]string{"a.txt": "a2", "c.txt": "c1", "d.txt": "d1"}
	equalMaps(t, "tree after the failed package", contents(readTree(t, dst)), afterPkg1)
	if s := readState(t, dst); !s.ChangeDumpUntil.Equal(at(2, 0)) {
		t.Errorf("state %+v, want until %s (pkg1's)", s, at(2, 0))
	}
	if left, _ := os.ReadDir(filepath.Join(dst, deststate.DirName, "tmp")); len(left) != 0 {
		t.Errorf("staging area not emptied: %d entries left", len(left))
	}

	writeFile(t, zip, good)
	res, fs = run(t, doc, dst, unpack.Options{})
	want := map[string]string{"a.txt": "a3", "d.txt": "d3", "sub/f.txt": "f1"}
	if res.Packages != 2 || res.Problems() != 0 {
		t.Errorf("rerun opened %d packages, want pkg2 and pkg3: %+v\n%s", res.Packages, res, dump(fs))
	}
	equalMaps(t, "tree after the rerun", contents(readTree(t, dst)), want)
	if s := readState(t, dst); !s.ChangeDumpUntil.Equal(at(4, 0)) {
		t.Errorf("state after the rerun %+v, want until %s", s, at(4, 0))
	}
}

// TestUnpackInOrderAppliedAgain gives the packages of an applied Change
// Dump again, one by one, as get --unpack does: those after the first are
// staged ahead, and every one is found applied when its turn comes. None
// writes a file, and none adds a record to the written log (a record of a
// version the tree no longer holds would make a later deletion refuse).
func TestUnpackInOrderAppliedAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := verifytest.ChangeDump(t, dir, []verifytest.ChangePackage{pkg1, pkg2, pkg3})
	dst := baseline(t)
	if res, fs := run(t, doc, dst, unpack.Options{}); res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	logFile := filepath.Join(dst, deststate.DirName, "written.log")
	logBefore, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	treeBefore := readTree(t, dst)
	var paths []string
	for i := 1; i <= 3; i++ {
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("changedump-%05d.zip", i)))
	}
	var written int
	err = unpack.UnpackInOrder(context.Background(), paths, dst, unpack.Options{Mapper: mapper(t)}, func(i int, r *unpack.PackageResult) bool {
		written += r.Written
		if r.Problems() != 0 {
			t.Errorf("package %d: %+v", i+1, r)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if written != 0 {
		t.Errorf("%d files written by packages already applied", written)
	}
	equalMaps(t, "tree", readTree(t, dst), treeBefore)
	if logAfter, _ := os.ReadFile(logFile); !bytes.Equal(logAfter, logBefore) {
		t.Errorf("written log grew by %q", logAfter[min(len(logBefore), len(logAfter)):])
	}
}

// TestDirFileSwapInOneRun: at the Source, directory d became a file and
// file f became a directory; pack --changes writes both as deletions and
// creations in one package, and one run applies them, from the Change
// Dump and, fetched resource by resource, from the Change List.
func TestDirFileSwapInOneRun(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"d/x.txt": "x", "d/sub/y.txt": "y", "f": "file f", "keep.txt": "k"})
	srv := httptest.NewServer(http.StripPrefix("/data/", http.FileServer(http.Dir(src))))
	defer srv.Close()
	base := srv.URL + "/data/"
	out := t.TempDir()
	packAt := func(changes bool, at time.Time) {
		t.Helper()
		if _, err := pack.Pack(context.Background(), src, out, pack.Options{BaseURL: base, At: at, Changes: changes}); err != nil {
			t.Fatal(err)
		}
	}
	packAt(false, fixedTime)
	os.RemoveAll(filepath.Join(src, "d"))
	os.Remove(filepath.Join(src, "f"))
	writeFiles(t, src, map[string]string{"d": "now a file", "f/z.txt": "now in a directory"})
	packAt(true, at(1, 0))
	want := contents(readTree(t, src))
	m, err := deststate.NewMapper(deststate.ByURI, base)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		apply func(dst string) (*unpack.Result, error)
	}{
		{"Change Dump", func(dst string) (*unpack.Result, error) {
			return unpack.Unpack(context.Background(), filepath.Join(out, "changedump.xml"), dst, unpack.Options{Mapper: m})
		}},
		{"Change List", func(dst string) (*unpack.Result, error) {
			return unpack.ApplyList(context.Background(), filepath.Join(out, layout.ChangeListName), dst, unpack.Options{Mapper: m, Client: srv.Client()})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := t.TempDir()
			if res, fs := run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{Mapper: m}); res.Problems() != 0 {
				t.Fatalf("baseline: %+v\n%s", res, dump(fs))
			}
			res, err := c.apply(dst)
			if err != nil || res.Problems() != 0 || res.Written != 2 || res.Deleted != 3 {
				t.Fatalf("%+v, %v", res, err)
			}
			equalMaps(t, "tree", contents(readTree(t, dst)), want)
		})
	}
}

// TestObstacleNamedInWords: a Resource Dump's file whose name is a
// directory in the tree, or whose directory is a file there, is refused
// with a message that says so in words, not as a mode string.
func TestObstacleNamedInWords(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, map[string]string{"a.txt": "a", "b/c.txt": "c"}), pack.Options{})
	dst := t.TempDir()
	os.Mkdir(filepath.Join(dst, "a.txt"), 0o755)
	writeFile(t, filepath.Join(dst, "b"), []byte("a file"))
	res, fs := run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{Overwrite: true})
	if res.Refused != 2 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	for path, words := range map[string]string{"a.txt": "a.txt exists and is a directory", "b/c.txt": "b is a file, where a directory is needed"} {
		f, ok := find(fs, finding.Error, unpack.CheckTarget, path)
		if !ok || !strings.Contains(f.Msg, words) || strings.Contains(f.Msg, "---") {
			t.Errorf("%s: %+v, want it to say %q", path, f, words)
		}
	}
}
