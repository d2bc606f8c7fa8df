package unpack_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
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
	held := holdPart2(s, 1) // part2.xml waits (5 s at most) for a resource to be asked for
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
	m, err := verify.NewMapper(verify.ByURI, s.base)
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
