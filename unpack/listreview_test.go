package unpack_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// TestListForeignRefusedBeforeFetching: a first run into a directory
// that holds a file at a later entry's name is refused by the survey
// (ErrForeign) without a resource asked for or reported: the list's
// first batch is not fetched ahead when the survey may still refuse the
// run for a file of the tree, as guardFresh refuses a dump quietly.
func TestListForeignRefusedBeforeFetching(t *testing.T) {
	unpack.SetListBatch(t, 2)
	s := newListSource(t)
	loc := twoParts(s, []string{"a", "b", "c"}, []string{"d", "e"})
	held := holdPart2(s, 1, time.Second) // part2.xml waits (1 s at most) for a resource to be asked for
	var asked atomic.Int64
	hold := s.before
	s.before = func(path string) {
		if strings.HasPrefix(path, "/res/") {
			asked.Add(1)
		}
		hold(path)
	}
	dst := t.TempDir()
	if err := os.WriteFile(filepath.Join(dst, "e"), []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := deststate.NewMapper(deststate.ByURI, s.base)
	if err != nil {
		t.Fatal(err)
	}
	var fs []finding.Finding
	_, err = unpack.ApplyList(context.Background(), loc, dst, unpack.Options{Mapper: m, Client: s.srv.Client(),
		Events: finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })})
	if !errors.Is(err, unpack.ErrForeign) {
		t.Fatalf("error %v, want ErrForeign", err)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("%d resources asked for by a run the survey refused, want none", n)
	}
	for _, f := range fs {
		if f.Path != "" {
			t.Errorf("reported by a run the survey refused: %s", dump([]finding.Finding{f}))
		}
	}
	if held.Load() {
		t.Error("a resource was asked for before the whole list was read")
	}
	noneStaged(t, dst)
}

// TestListDeleteThenFileAcrossBatches: a Change List whose deletions
// empty a directory or remove a file, and whose next changes put a file
// or a directory in their place, gives the same tree whether all are in
// one batch or each change's batch is staged while the one before
// commits. A file becoming a directory (xN, xN/y) was refused now and
// then, when the check of xN/y's batch found xN a file and then gone,
// halfway through the deletion's commit.
func TestListDeleteThenFileAcrossBatches(t *testing.T) {
	const pairs = 40
	for _, batch := range []int{1000, 1, 1, 1} {
		unpack.SetListBatch(t, batch)
		c := newChangeSource(t)
		entry, apply := c.entry, c.apply
		before, after := map[string]string{}, map[string]string{}
		var baseline, changes []resourcesync.URL
		for i := range pairs {
			d, x := fmt.Sprintf("d%d", i), fmt.Sprintf("x%d", i)
			before[d+"/g"], before[x] = "g", "x"
			after[d], after[x+"/y"] = "d", "y"
			baseline = append(baseline, entry(d+"/g", "g", "", 0), entry(x, "x", "", 0))
			changes = append(changes, entry(d+"/g", "", resourcesync.ChangeDeleted, 1), entry(d, "d", resourcesync.ChangeCreated, 2),
				entry(x, "", resourcesync.ChangeDeleted, 1), entry(x+"/y", "y", resourcesync.ChangeCreated, 2))
		}
		r, fs := apply("resourcelist.xml", resourcesync.MD{Capability: resourcesync.CapResourceList, At: fixedTime}, before, baseline...)
		if r.Problems() != 0 || r.Written != 2*pairs {
			t.Fatalf("baseline: %+v\n%s", r, dump(fs))
		}
		r, fs = apply("changelist.xml", resourcesync.MD{Capability: resourcesync.CapChangeList, From: fixedTime, Until: fixedTime.Add(3 * time.Hour)}, after, changes...)
		if r.Problems() != 0 || r.Written != 2*pairs || r.Deleted != 2*pairs {
			t.Errorf("batch %d: %+v\n%s", batch, r, dump(fs))
		}
		equalMaps(t, "tree", contents(readTree(t, c.dir)), after)
	}
}
