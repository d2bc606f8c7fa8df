package replica_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// TestBaselineThenChangeDumps syncs an empty directory from a Source's
// base URL (well-known discovery, Resource Dump), then after each of two
// rounds of changes (creations, updates, deletions; Change Dump packages)
// syncs again: the tree is the Source's, byte for byte, every time.
func TestBaselineThenChangeDumps(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(40, 3000))
	s.packDump(pack.Options{})
	dst := t.TempDir()

	res, fs, _ := syncRun(t, s.srv.URL+"/", dst, replica.Options{})
	if res.Problems() != 0 || res.Written != 40 || len(res.Steps) != 1 || res.Steps[0].Kind != "baseline" {
		t.Fatalf("baseline: %+v\n%s", res, problems(fs))
	}
	if res.BaseURL != s.base {
		t.Errorf("base URL %q, want %q (from the manifest's paths)", res.BaseURL, s.base)
	}
	sameTree(t, dst, s.files)

	// Round 1: one Change Dump package.
	c1 := s.changeSet(t0.Add(time.Hour),
		change{"d0/f000.txt", "updated zero", resourcesync.ChangeUpdated},
		change{"new/one.txt", "brand new", resourcesync.ChangeCreated},
		change{"d1/f001.txt", "", resourcesync.ChangeDeleted})
	p1 := verifytest.ChangePackage{From: t0, Until: t0.Add(2 * time.Hour), Changes: c1}
	s.changeDump([]verifytest.ChangePackage{p1})
	res, fs, _ = syncRun(t, s.srv.URL+"/", dst, replica.Options{})
	if res.Problems() != 0 || res.Written != 2 || res.Deleted != 1 || res.Steps[0].Kind != "incremental" {
		t.Fatalf("round 1: %+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)

	// Round 2: a second package; the first is skipped as applied.
	c2 := s.changeSet(t0.Add(3*time.Hour),
		change{"new/one.txt", "", resourcesync.ChangeDeleted},
		change{"d2/f002.txt", "second update", resourcesync.ChangeUpdated})
	p2 := verifytest.ChangePackage{From: p1.Until, Until: t0.Add(4 * time.Hour), Changes: c2}
	s.changeDump([]verifytest.ChangePackage{p1, p2})
	res, fs, _ = syncRun(t, "", dst, replica.Options{}) // the state names the Source
	if res.Problems() != 0 || res.Written != 1 || res.Deleted != 1 {
		t.Fatalf("round 2: %+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)
	if !res.Until.Equal(p2.Until) {
		t.Errorf("until %v, want %v", res.Until, p2.Until)
	}
	st, _ := deststate.Read(dst)
	if st.Sync == nil || st.Sync.Source != s.srv.URL+"/" || st.Sync.BaseURL != s.base {
		t.Errorf("state: %+v", st.Sync)
	}

	// Nothing new: nothing written.
	res, fs, _ = syncRun(t, "", dst, replica.Options{Audit: true})
	if res.Problems() != 0 || res.Written != 0 || res.Deleted != 0 {
		t.Fatalf("round 3: %+v\n%s", res, problems(fs))
	}
}

// TestDeletesOnlyWhatSyncWrote: a deleted change does not remove a file
// sync did not write; a file sync wrote and that was changed at the
// Destination is repaired first (the copy is the Source's), then deleted.
func TestDeletesOnlyWhatSyncWrote(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(5, 100))
	s.packDump(pack.Options{})
	dst := t.TempDir()
	syncRun(t, s.srv.URL+"/", dst, replica.Options{})
	mine := filepath.Join(dst, "d1", "mine.txt")
	os.WriteFile(mine, []byte("the user's own"), 0o644)
	edited := filepath.Join(dst, "d2", "f002.txt")
	os.WriteFile(edited, []byte("edited here"), 0o644)
	c := s.changeSet(t0.Add(time.Hour), change{"d1/mine.txt", "", resourcesync.ChangeDeleted}, change{"d2/f002.txt", "", resourcesync.ChangeDeleted})
	s.changeDump([]verifytest.ChangePackage{{From: t0, Until: t0.Add(2 * time.Hour), Changes: c}})
	res, fs, _ := syncRun(t, "", dst, replica.Options{})
	if b, err := os.ReadFile(mine); err != nil || string(b) != "the user's own" {
		t.Fatalf("a file sync did not write was deleted or changed: %q %v", b, err)
	}
	if res.Refused != 1 || !hasFinding(fs, finding.Error, unpack.CheckConflict) {
		t.Errorf("conflict not reported: %+v\n%s", res, problems(fs))
	}
	if _, err := os.Stat(edited); !os.IsNotExist(err) || res.Repair.Repaired != 1 || res.Deleted != 1 {
		t.Errorf("the edited file sync wrote: %v, %+v repair %+v", err, res, res.Repair)
	}
}

// TestGapTakesNewBaseline: when the Change Dump starts after the tree's
// until, changes in between are lost, and sync says so and takes the
// newest Resource Dump again.
func TestGapTakesNewBaseline(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(6, 100))
	s.packDump(pack.Options{})
	dst := t.TempDir()
	syncRun(t, s.srv.URL+"/", dst, replica.Options{})

	lost := s.changeSet(t0.Add(time.Hour), change{"d0/f000.txt", "changed in the gap", resourcesync.ChangeUpdated})
	_ = lost
	s.at = t0.Add(5 * time.Hour)
	s.packDump(pack.Options{})
	c := s.changeSet(t0.Add(6*time.Hour), change{"d1/f001.txt", "after the new dump", resourcesync.ChangeUpdated})
	s.changeDump([]verifytest.ChangePackage{{From: s.at, Until: t0.Add(7 * time.Hour), Changes: c}})

	res, fs, notes := syncRun(t, "", dst, replica.Options{})
	if res.Problems() != 0 || len(res.Steps) != 2 || res.Steps[0].Kind != "baseline" || res.Steps[1].Kind != "incremental" {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	if !strings.Contains(strings.Join(notes, "\n"), "new baseline") {
		t.Errorf("the new baseline is not explained: %q", notes)
	}
	sameTree(t, dst, s.files)
}

// TestResourceListFallback: a Source with only a Resource List and a
// Change List is synced resource by resource, each checked.
func TestResourceListFallback(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(30, 500))
	s.publishResources()
	dst := t.TempDir()
	res, fs, _ := syncRun(t, s.srv.URL+"/capabilitylist.xml", dst, replica.Options{Fetches: 4})
	if res.Problems() != 0 || res.Written != 30 {
		t.Fatalf("baseline: %+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)

	c := s.changeSet(t0.Add(time.Hour),
		change{"d0/f000.txt", "zero, changed", resourcesync.ChangeUpdated},
		change{"x/created.txt", "created", resourcesync.ChangeCreated},
		change{"d3/f003.txt", "", resourcesync.ChangeDeleted},
		change{"d0/f000.txt", "zero, changed twice", resourcesync.ChangeUpdated})
	s.changeList(t0, t0.Add(2*time.Hour), c)
	res, fs, _ = syncRun(t, "", dst, replica.Options{})
	if res.Problems() != 0 || res.Written != 2 || res.Deleted != 1 {
		t.Fatalf("changes: %+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)
	res, fs, _ = syncRun(t, "", dst, replica.Options{})
	if res.Problems() != 0 || res.Written != 0 {
		t.Fatalf("again: %+v\n%s", res, problems(fs))
	}
}

// TestResourceListBadResource: a resource whose bytes differ from the
// list is refused, the file at its name left alone, and the state does
// not move.
func TestResourceListBadResource(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(5, 200))
	s.publishResources()
	os.WriteFile(filepath.Join(s.out, "res", "d2", "f002.txt"), []byte(strings.Repeat("x", 200)), 0o644)
	os.WriteFile(filepath.Join(s.out, "res", "d3", "f003.txt"), []byte("short"), 0o644)
	dst := t.TempDir()
	res, fs, _ := syncRun(t, s.srv.URL+"/", dst, replica.Options{})
	if res.Refused != 2 || res.Written != 3 || !hasFinding(fs, finding.Error, finding.CheckHash) || !hasFinding(fs, finding.Error, finding.CheckLength) {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	want := maps.Clone(s.files)
	delete(want, "d2/f002.txt")
	delete(want, "d3/f003.txt")
	sameTree(t, dst, want)
	if st, _ := deststate.Read(dst); !st.Since().IsZero() {
		t.Errorf("state moved past a failed baseline: %+v", st)
	}
}

// TestDryRun writes nothing and says what would be written.
func TestDryRun(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(8, 100))
	s.packDump(pack.Options{})
	dst := filepath.Join(t.TempDir(), "new")
	res, fs, _ := syncRun(t, s.srv.URL+"/", dst, replica.Options{DryRun: true})
	if res.Written != 8 || res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("dry run created the destination: %v", err)
	}
}

func hasFinding(fs []finding.Finding, sev finding.Severity, check string) bool {
	for _, f := range fs {
		if f.Severity == sev && f.Code == check {
			return true
		}
	}
	return false
}

// TestOtherSourceRefused: a tree synced from one Source is not synced
// from another, but the same Source reached another way is fine.
func TestOtherSourceRefused(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(3, 100))
	s.packDump(pack.Options{})
	other := newSource(t, files(2, 50))
	other.packDump(pack.Options{})
	dst := t.TempDir()
	syncRun(t, s.srv.URL+"/", dst, replica.Options{})
	if _, err := replica.Sync(t.Context(), location(t, other.srv.URL+"/"), dst, replica.Options{}); !errors.Is(err, replica.ErrOtherSource) {
		t.Fatalf("err = %v, want ErrOtherSource", err)
	}
	res, fs, _ := syncRun(t, s.srv.URL+"/capabilitylist.xml", dst, replica.Options{})
	if res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)
}

// TestDryRunIncremental says what a Change Dump would change and leaves
// the tree and the state as they were.
func TestDryRunIncremental(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(5, 100))
	s.packDump(pack.Options{})
	dst := t.TempDir()
	syncRun(t, s.srv.URL+"/", dst, replica.Options{})
	before := verifytest.ReadTree(t, dst)
	stBefore, _ := deststate.Read(dst)
	c := s.changeSet(t0.Add(time.Hour),
		change{"d0/f000.txt", "new zero", resourcesync.ChangeUpdated},
		change{"d2/f002.txt", "", resourcesync.ChangeDeleted})
	s.changeDump([]verifytest.ChangePackage{{From: t0, Until: t0.Add(2 * time.Hour), Changes: c}})
	res, fs, _ := syncRun(t, "", dst, replica.Options{DryRun: true})
	if res.Written != 1 || res.Deleted != 1 || res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, before)
	if st, _ := deststate.Read(dst); !st.Since().Equal(stBefore.Since()) {
		t.Errorf("a dry run moved the state: %v -> %v", stBefore.Since(), st.Since())
	}
}
