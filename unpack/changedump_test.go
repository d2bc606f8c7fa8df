package unpack_test

import (
	"encoding/json"
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
	"github.com/rsdump/rsdump/verify"
)

func at(h, m int) time.Time {
	return fixedTime.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
}

func change(kind, rel, data string, lastmod time.Time) verifytest.File {
	return verifytest.File{Rel: rel, Data: data, Change: kind, Lastmod: lastmod}
}

var (
	pkg1 = verifytest.ChangePackage{From: at(0, 0), Until: at(2, 0), Changes: []verifytest.File{
		change(resourcesync.ChangeUpdated, "a.txt", "a2", at(1, 10)),
		change(resourcesync.ChangeDeleted, "b.txt", "", at(1, 20)),
		change(resourcesync.ChangeCreated, "d.txt", "d1", at(1, 30)),
	}}
	pkg2 = verifytest.ChangePackage{From: at(2, 0), Until: at(3, 0), Changes: []verifytest.File{
		change(resourcesync.ChangeUpdated, "d.txt", "d2", at(2, 10)),
		change(resourcesync.ChangeUpdated, "d.txt", "d3", at(2, 20)),
		change(resourcesync.ChangeCreated, "e.txt", "e1", at(2, 30)),
		change(resourcesync.ChangeDeleted, "e.txt", "", at(2, 40)),
		change(resourcesync.ChangeCreated, "sub/f.txt", "f1", at(2, 50)),
	}}
	pkg3 = verifytest.ChangePackage{From: at(3, 0), Until: at(4, 0), Changes: []verifytest.File{
		change(resourcesync.ChangeUpdated, "a.txt", "a3", at(3, 10)),
		change(resourcesync.ChangeDeleted, "c.txt", "", at(3, 20)),
		change(resourcesync.ChangeDeleted, "local.txt", "", at(3, 30)),
	}}
)

// baseline unpacks a Resource Dump of a, b and c into a new tree.
func baseline(t *testing.T) string {
	out := packDir(t, tree(t, map[string]string{"a.txt": "a1", "b.txt": "b1", "c.txt": "c1"}), pack.Options{})
	dst := t.TempDir()
	if res, fs := run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{}); res.Problems() != 0 {
		t.Fatalf("baseline: %+v\n%s", res, dump(fs))
	}
	return dst
}

func readState(t *testing.T, dst string) deststate.State {
	var s deststate.State
	b, err := os.ReadFile(filepath.Join(dst, ".rsdump", "state.json"))
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeState gives dst the state a baseline would leave.
func writeState(t *testing.T, dst string, s deststate.State) {
	t.Helper()
	s.Version = 1
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dst, ".rsdump", "state.json"), b)
}

func TestChangeDump(t *testing.T) {
	t.Parallel()
	dst := baseline(t)
	doc := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{pkg1, pkg2})
	res, fs := run(t, doc, dst, unpack.Options{})
	if res.Problems() != 0 || res.Packages != 2 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	want := map[string]string{"a.txt": "a2", "c.txt": "c1", "d.txt": "d3", "sub/f.txt": "f1"}
	equalMaps(t, "tree", contents(readTree(t, dst)), want)
	if mt := readTree(t, dst)["d.txt"]; mt != "d3@"+at(2, 20).Format(time.RFC3339Nano)+" -rw-r--r--" {
		t.Errorf("d.txt: %s, want the mtime of its last change", mt)
	}
	if s := readState(t, dst); !s.ChangeDumpUntil.Equal(at(3, 0)) || s.Pending {
		t.Errorf("state %+v, want until %s", s, at(3, 0))
	}
	// Running again applies nothing: both packages are skipped.
	res, fs = run(t, doc, dst, unpack.Options{})
	if res.Packages != 0 || res.Written+res.Deleted != 0 || res.Problems() != 0 {
		t.Errorf("second run: %+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree after a second run", contents(readTree(t, dst)), want)
}

// TestChangeDumpContinues applies a later Change Dump from the state, and
// refuses deletions of files that are not the ones rsdump wrote.
func TestChangeDumpContinues(t *testing.T) {
	t.Parallel()
	dst := baseline(t)
	run(t, verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{pkg1, pkg2}), dst, unpack.Options{})
	writeFile(t, filepath.Join(dst, "c.txt"), []byte("changed here"))
	writeFile(t, filepath.Join(dst, "local.txt"), []byte("never from the Source"))
	doc := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{pkg1, pkg2, pkg3})
	res, fs := run(t, doc, dst, unpack.Options{})
	if res.Packages != 1 || res.Written != 1 {
		t.Errorf("want only the third package applied: %+v\n%s", res, dump(fs))
	}
	for _, p := range []string{"c.txt", "local.txt"} {
		if _, ok := find(fs, finding.Error, unpack.CheckConflict, p); !ok {
			t.Errorf("deleting %s not refused:\n%s", p, dump(fs))
		}
	}
	want := map[string]string{"a.txt": "a3", "c.txt": "changed here", "d.txt": "d3", "sub/f.txt": "f1", "local.txt": "never from the Source"}
	equalMaps(t, "tree", contents(readTree(t, dst)), want)
	if s := readState(t, dst); !s.ChangeDumpUntil.Equal(at(3, 0)) {
		t.Errorf("state moved past a package with problems: %+v", s)
	}
}

func TestChangeDumpDeletesWhatItWrote(t *testing.T) {
	t.Parallel()
	dst := baseline(t)
	doc := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{pkg1, pkg2, pkg3})
	writeFile(t, filepath.Join(dst, "local.txt"), []byte("never from the Source"))
	res, fs := run(t, doc, dst, unpack.Options{})
	if _, ok := find(fs, finding.OK, unpack.CheckDeleted, "c.txt"); !ok {
		t.Errorf("c.txt, written by the baseline and unchanged, not deleted: %+v\n%s", res, dump(fs))
	}
	if _, err := os.Stat(filepath.Join(dst, "c.txt")); err == nil {
		t.Errorf("c.txt still there")
	}
}

func TestChangeManifestOrder(t *testing.T) {
	t.Parallel()
	p := pkg1
	p.Changes = []verifytest.File{pkg1.Changes[2], pkg1.Changes[0]}
	z, _ := verifytest.ChangeZip(t, p)
	var fs []finding.Finding
	zp := writeFile(t, filepath.Join(t.TempDir(), "c.zip"), z)
	verify.Verify(t.Context(), []string{zp}, verify.Options{Events: finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })})
	if _, ok := find(fs, finding.Error, finding.CheckOrder, "changes/2/a.txt"); !ok {
		t.Errorf("changes out of order not reported:\n%s", dump(fs))
	}
}

// TestSnapshotPackageRewindsState: a Resource Dump package applied on its
// own (as `get --unpack` does) after Change Dumps would put files back to
// the snapshot: it is refused, naming both times, and the tree and state
// stay as they were. With Rollback it is applied and the state rewound,
// so the changes made since apply again, not skipped as already applied.
func TestSnapshotPackageRewindsState(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, map[string]string{"a.txt": "a1", "b.txt": "b1", "c.txt": "c1"}), pack.Options{})
	dst := t.TempDir()
	run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{})
	doc := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{pkg1})
	run(t, doc, dst, unpack.Options{})
	before, stBefore := readTree(t, dst), readState(t, dst)
	res, fs := run(t, filepath.Join(out, "resourcedump-00001.zip"), dst, unpack.Options{})
	f, ok := find(fs, finding.Error, unpack.CheckRollback, "")
	if !ok || res.Written != 0 || !strings.Contains(f.Msg, ftime(fixedTime)) || !strings.Contains(f.Msg, ftime(at(2, 0))) {
		t.Fatalf("older snapshot package not refused naming both times: %+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), before)
	if s := readState(t, dst); !s.Since().Equal(stBefore.Since()) {
		t.Errorf("state moved: %+v", s)
	}
	if res, fs := run(t, filepath.Join(out, "resourcedump-00001.zip"), dst, unpack.Options{Rollback: true}); res.Problems() != 0 {
		t.Fatalf("snapshot package: %+v\n%s", res, dump(fs))
	}
	if s := readState(t, dst); !s.ChangeDumpUntil.IsZero() || !s.ResourceDumpAt.Equal(fixedTime) {
		t.Errorf("state %+v, want rewound to the snapshot at %s", s, fixedTime)
	}
	res, fs = run(t, doc, dst, unpack.Options{})
	if res.Problems() != 0 {
		t.Fatalf("change dump again: %+v\n%s", res, dump(fs))
	}
	want := map[string]string{"a.txt": "a2", "c.txt": "c1", "d.txt": "d1"}
	equalMaps(t, "tree", contents(readTree(t, dst)), want)
}

func ftime(t time.Time) string { return resourcesync.FormatTime(t) }

// TestCreateInDirectoryEmptiedBefore: a package deletes the last file of
// a directory, which removes the directory, then creates a file in it:
// the directory is made again and the file lands (a handle held open on
// the removed directory lost it once).
func TestCreateInDirectoryEmptiedBefore(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, map[string]string{"dir/d.txt": "d1", "z.txt": "z1"}), pack.Options{})
	dst := t.TempDir()
	if res, fs := run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{}); res.Problems() != 0 {
		t.Fatalf("baseline: %+v\n%s", res, dump(fs))
	}
	doc := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{{From: at(0, 0), Until: at(1, 0), Changes: []verifytest.File{
		change(resourcesync.ChangeUpdated, "dir/d.txt", "d2", at(0, 10)),
		change(resourcesync.ChangeDeleted, "dir/d.txt", "", at(0, 20)),
		change(resourcesync.ChangeCreated, "dir/e.txt", "e1", at(0, 30)),
	}}})
	if res, fs := run(t, doc, dst, unpack.Options{}); res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), map[string]string{"dir/e.txt": "e1", "z.txt": "z1"})
}

// TestChangePackageTimeOfChange: a Change Dump package whose manifest
// gives no until is current to its last change, the latest datetime, not
// to its files' own (older) lastmods: it is applied, not skipped as
// applied before, and the state moves to that change.
func TestChangePackageTimeOfChange(t *testing.T) {
	t.Parallel()
	dst := baseline(t)
	a := change(resourcesync.ChangeUpdated, "a.txt", "copied in with an old mtime", at(-5, 0))
	a.Datetime = at(1, 10)
	z, _ := verifytest.ChangeZip(t, verifytest.ChangePackage{From: at(0, 0), Changes: []verifytest.File{a}})
	res, fs := run(t, writeFile(t, filepath.Join(t.TempDir(), "c.zip"), z), dst, unpack.Options{})
	if res.Written != 1 || res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	if s := readState(t, dst); !s.ChangeDumpUntil.Equal(at(1, 10)) {
		t.Errorf("state until %s, want the change's datetime %s", s.ChangeDumpUntil, at(1, 10))
	}
	if fi, err := os.Stat(filepath.Join(dst, "a.txt")); err != nil || !fi.ModTime().Equal(at(-5, 0)) {
		t.Errorf("a.txt: %v, want mtime %s, its lastmod", err, at(-5, 0))
	}
}
