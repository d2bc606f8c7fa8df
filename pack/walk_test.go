package pack

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readAheadTree is wide and deep enough that the walk reads directories
// ahead (more subdirectories than readAhead at several levels), with
// files beside directories and names that sort around '/'.
func readAheadTree(t *testing.T) (string, []string) {
	files := map[string]string{}
	for i := range 7 {
		for j := range 6 {
			for k := range 3 {
				files[fmt.Sprintf("d%d/s%d/f%d", i, j, k)] = "x"
			}
			files[fmt.Sprintf("d%d/s%d-x", i, j)] = "y"
		}
		files[fmt.Sprintf("d%d-file", i)] = "z"
	}
	files["top"] = "t"
	want := make([]string, 0, len(files))
	for rel := range files {
		want = append(want, rel)
	}
	// A directory the walk skips (its name cannot go in a manifest),
	// first in the root: it must not be read ahead and hold a slot.
	files["a\x01/f"] = "s"
	slices.SortFunc(want, comparePaths)
	return tree(t, files), want
}

// TestWalkReadAhead: directories read ahead on other goroutines are
// still visited in walk order, each file once.
func TestWalkReadAhead(t *testing.T) {
	t.Parallel()
	src, want := readAheadTree(t)
	var got, warned []string
	w := &walker{ctx: context.Background(), warn: func(p, m string) { warned = append(warned, p) }}
	w.visit = func(it item) error {
		got = append(got, it.rel)
		if it.abs != filepath.Join(src, filepath.FromSlash(it.rel)) || it.size != 1 {
			t.Errorf("%s: abs %s, size %d; want %s, 1", it.rel, it.abs, it.size, filepath.Join(src, it.rel))
		}
		return nil
	}
	if err := w.walk(src); err != nil {
		t.Fatal(err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], `\x01`) {
		t.Errorf("warnings for %q, want one for the directory a\\x01", warned)
	}
	if !slices.Equal(got, want) {
		t.Errorf("walk order:\n got %v\nwant %v", got, want)
	}
	if len(w.ahead) != 0 || len(w.slots) != 0 {
		t.Errorf("after the walk: %d listings ahead, %d slots held; want none", len(w.ahead), len(w.slots))
	}
}

// TestWalkReadsSiblingsAhead: in a wide tree of one level, as pack's
// benchmarks make, each slot freed goes to the next sibling: every
// directory but the first few is read ahead, not only the first
// readAhead of them.
func TestWalkReadsSiblingsAhead(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	const dirs = 40
	for i := range dirs {
		files[fmt.Sprintf("d%02d/f", i)] = "x"
	}
	src := tree(t, files)
	w := &walker{ctx: context.Background(), warn: func(p, m string) { t.Errorf("warning for %s: %s", p, m) }}
	w.visit = func(item) error { return nil }
	if err := w.walk(src); err != nil {
		t.Fatal(err)
	}
	// The walk may get to a directory before its listing is started
	// only when every slot is held.
	if w.taken < dirs-readAhead {
		t.Errorf("%d of %d directories read ahead, want at least %d", w.taken, dirs, dirs-readAhead)
	}
	if len(w.ahead) != 0 || len(w.slots) != 0 || len(w.todo) != 0 {
		t.Errorf("after the walk: %d listings ahead, %d slots held, %d lists to read; want none", len(w.ahead), len(w.slots), len(w.todo))
	}
}

// TestWalkStopsReadAhead: a walk that stops early (an error from visit)
// returns only once every directory it was reading ahead is read.
func TestWalkStopsReadAhead(t *testing.T) {
	t.Parallel()
	src, _ := readAheadTree(t)
	stop := errors.New("stop")
	for _, after := range []int{1, 5, 40} {
		n := 0
		w := &walker{ctx: context.Background(), warn: func(string, string) {}}
		w.visit = func(item) error {
			if n++; n == after {
				return stop
			}
			return nil
		}
		if err := w.walk(src); !errors.Is(err, stop) {
			t.Fatalf("stopped after %d files: error %v, want %v", after, err, stop)
		}
		if len(w.ahead) == 0 {
			t.Errorf("stopped after %d files: nothing was read ahead", after)
		}
		for dir, l := range w.ahead {
			select {
			case <-l.done:
			default:
				t.Errorf("stopped after %d files: %s still being read after the walk returned", after, dir)
			}
		}
	}
}

// TestWalkReadAheadCancel: a cancelled walk reports the cancellation.
func TestWalkReadAheadCancel(t *testing.T) {
	t.Parallel()
	src, _ := readAheadTree(t)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	w := &walker{ctx: ctx, warn: func(string, string) {}}
	w.visit = func(item) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	}
	if err := w.walk(src); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want %v", err, context.Canceled)
	}
}

// TestWalkRootSpelling: however the root is spelled (".", a trailing
// slash), each file's path is filepath.Join of the root and its name.
func TestWalkRootSpelling(t *testing.T) {
	src := tree(t, map[string]string{"a/b": "x", "c": "y"})
	t.Chdir(src)
	for _, root := range []string{".", "./", "a/..", src + "/"} {
		var got []string
		w := &walker{ctx: context.Background(), warn: func(string, string) {}}
		w.visit = func(it item) error {
			if want := filepath.Join(root, filepath.FromSlash(it.rel)); it.abs != want {
				t.Errorf("root %q: %s walked as %s, want %s", root, it.rel, it.abs, want)
			}
			got = append(got, it.rel)
			return nil
		}
		if err := w.walk(root); err != nil || !slices.Equal(got, []string{"a/b", "c"}) {
			t.Errorf("root %q: walked %q (%v)", root, got, err)
		}
	}
}

// TestWalkChecksNamesAsPaths: the walk judges a name under a directory
// as safepath judges the whole path: a drive letter counts only as the
// first segment, so that "C:x" is skipped at the root and walked below.
func TestWalkChecksNamesAsPaths(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"C:x": "a", "d/C:x": "b", "d/ok": "c"})
	var got, warned []string
	w := &walker{ctx: context.Background(), warn: func(p, _ string) { warned = append(warned, p) }}
	w.visit = func(it item) error { got = append(got, it.rel); return nil }
	if err := w.walk(src); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"d/C:x", "d/ok"}) || !slices.Equal(warned, []string{"C:x"}) {
		t.Errorf("walked %q, warned %q; want d/C:x and d/ok walked, C:x warned", got, warned)
	}
}
