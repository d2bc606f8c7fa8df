package unpack_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// TestOlderDumpRefused: unpack of the Resource Dump a tree was built from,
// after a Change Dump moved the tree on, is refused, naming both times,
// and changes nothing; with Rollback the tree becomes exactly that
// snapshot (files created since removed, files changed or deleted since
// back as they were, a file of the user's own kept) and the state says
// so.
func TestOlderDumpRefused(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a.txt": "a1", "b.txt": "b1", "c.txt": "c1"})
	out := packDir(t, src, pack.Options{})
	doc := filepath.Join(out, layout.DumpName)
	dst := t.TempDir()
	run(t, doc, dst, unpack.Options{})
	changes := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{pkg1}) // a2, b deleted, d1 created
	run(t, changes, dst, unpack.Options{})
	writeFile(t, filepath.Join(dst, "mine.txt"), []byte("the user's own"))
	before, stBefore := readTree(t, dst), readState(t, dst)

	_, err := unpack.Unpack(context.Background(), doc, dst, unpack.Options{Mapper: mapper(t)})
	var re *unpack.RollbackError
	if !errors.Is(err, unpack.ErrRollback) || !errors.As(err, &re) {
		t.Fatalf("err = %v, want a RollbackError", err)
	}
	for _, want := range []string{ftime(fixedTime), ftime(at(2, 0)), doc, dst, "--rollback"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	equalMaps(t, "tree after the refusal", readTree(t, dst), before)
	if s := readState(t, dst); !s.Since().Equal(stBefore.Since()) || s.Rollback != nil {
		t.Errorf("state changed: %+v", s)
	}

	res, fs := run(t, doc, dst, unpack.Options{Rollback: true})
	if res.Problems() != 0 || res.Deleted != 1 || res.Written != 2 {
		t.Fatalf("rollback: %+v\n%s", res, dump(fs))
	}
	want := map[string]string{"a.txt": "a1", "b.txt": "b1", "c.txt": "c1", "mine.txt": "the user's own"}
	equalMaps(t, "tree after the rollback", contents(readTree(t, dst)), want)
	s := readState(t, dst)
	if !s.ResourceDumpAt.Equal(fixedTime) || !s.ChangeDumpUntil.IsZero() || s.Rollback == nil ||
		!s.Rollback.From.Equal(at(2, 0)) || !s.Rollback.To.Equal(fixedTime) || s.Rollback.Document != doc {
		t.Errorf("state after the rollback: %+v, rollback %+v", s, s.Rollback)
	}
	// The changes apply again from the snapshot.
	if res, fs := run(t, changes, dst, unpack.Options{}); res.Problems() != 0 || res.Written != 2 || res.Deleted != 1 {
		t.Fatalf("changes again: %+v\n%s", res, dump(fs))
	}
}

// TestManifestContradictsDocument: a dump document that gives a package
// another at (or from, until) than the package's own manifest is not the
// package's: it is refused whole, naming both, and nothing is written.
func TestManifestContradictsDocument(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, map[string]string{"a.txt": "a1", "b.txt": "b1"}), pack.Options{})
	doc := filepath.Join(out, layout.DumpName)
	h, urls := verifytest.ReadDoc(t, doc)
	urls[0].MD.At = fixedTime.Add(time.Hour) // the document lies about when
	verifytest.WriteDoc(t, doc, h, urls)
	dst := t.TempDir()
	res, fs := run(t, doc, dst, unpack.Options{})
	f, ok := find(fs, finding.Error, unpack.CheckWindow, "")
	if !ok || res.Written != 0 || !strings.Contains(f.Msg, ftime(fixedTime)) || !strings.Contains(f.Msg, ftime(fixedTime.Add(time.Hour))) {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	if got := contents(readTree(t, dst)); len(got) != 0 {
		t.Errorf("written: %v", got)
	}
	if _, err := os.Stat(filepath.Join(dst, ".rsdump", "state.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused package left a state")
	}
}

// TestFutureTimesRefused: a Change Dump whose times are later than now
// (a Source's clock a day ahead, or a document made to move the
// Destination's state past changes it has not seen) is refused, naming
// the time, and the state does not move; the same for a package whose
// manifest gives such a time.
func TestFutureTimesRefused(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a.txt": "a1"})
	out := t.TempDir()
	base := pack.Options{BaseURL: verifytest.BaseURL}
	now := time.Now().UTC().Truncate(time.Second)
	o := base
	o.At = now.Add(-time.Hour)
	if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{})
	stBefore := readState(t, dst)
	// pack refuses such an --at: the Change Dump is made by hand.
	verifytest.ChangeDump(t, out, []verifytest.ChangePackage{{From: o.At, Until: now.Add(24 * time.Hour), Changes: []verifytest.File{
		{Rel: "a.txt", Data: "a2", Change: resourcesync.ChangeUpdated, Lastmod: now}}}})
	for _, what := range []string{"changedump.xml", "changedump-00001.zip"} {
		res, fs := run(t, filepath.Join(out, what), dst, unpack.Options{})
		if res.Written != 0 || res.Problems() == 0 || !strings.Contains(dump(fs), "later than now") ||
			!strings.Contains(dump(fs), ftime(now.Add(24*time.Hour))) {
			t.Errorf("%s: %+v\n%s", what, res, dump(fs))
		}
		if s := readState(t, dst); !s.Since().Equal(stBefore.Since()) {
			t.Errorf("%s moved the state to %s", what, ftime(s.Since()))
		}
	}
	if got := contents(readTree(t, dst))["a.txt"]; got != "a1" {
		t.Errorf("a.txt = %q", got)
	}
}
