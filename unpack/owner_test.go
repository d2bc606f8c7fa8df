package unpack_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

var ownerFiles = map[string]string{"a.txt": "a1", "b.txt": "b1", "sub/c.txt": "c1"}

// TestFirstRunRefusesForeign: a first unpack into a directory that holds
// a file at a bitstream's name, a file rsdump never wrote, refuses before
// anything lands, naming the file by its absolute path; a file at no
// bitstream's name does not stop it. The same for a Resource List.
func TestFirstRunRefusesForeign(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, ownerFiles), pack.Options{})
	srv := httptest.NewServer(http.StripPrefix("/rs/", http.FileServer(http.Dir(tree(t, ownerFiles)))))
	defer srv.Close()
	list := rebaseList(t, filepath.Join(out, layout.ResourceListName), srv.URL+"/rs/")
	m, err := deststate.NewMapper(deststate.ByURI, srv.URL+"/rs/")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		apply func(dst string) (*unpack.Result, error)
	}{
		{"Resource Dump", func(dst string) (*unpack.Result, error) {
			return unpack.Unpack(context.Background(), filepath.Join(out, layout.DumpName), dst, unpack.Options{Mapper: mapper(t)})
		}},
		{"package", func(dst string) (*unpack.Result, error) {
			return unpack.Unpack(context.Background(), filepath.Join(out, "resourcedump-00001.zip"), dst, unpack.Options{Mapper: mapper(t)})
		}},
		{"Resource List", func(dst string) (*unpack.Result, error) {
			return unpack.ApplyList(context.Background(), list, dst, unpack.Options{Mapper: m, Client: srv.Client()})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := t.TempDir()
			mine := map[string]string{"notes.txt": "the user's own", "sub/c.txt": "the user's c"}
			writeFiles(t, dst, mine)
			_, err := c.apply(dst)
			var fe *unpack.ForeignError
			if !errors.Is(err, unpack.ErrForeign) || !errors.As(err, &fe) || fe.Path != "sub/c.txt" ||
				!strings.Contains(err.Error(), filepath.Join(dst, "sub", "c.txt")) {
				t.Fatalf("err = %v, want ForeignError naming %s", err, filepath.Join(dst, "sub", "c.txt"))
			}
			equalMaps(t, "tree", contents(readTree(t, dst)), mine)
			if _, err := os.Stat(filepath.Join(dst, ".rsdump", "state.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused run left a state (%v)", err)
			}
			// A foreign file at no bitstream's name is no obstacle.
			os.Remove(filepath.Join(dst, "sub", "c.txt"))
			if res, err := c.apply(dst); err != nil || res.Problems() != 0 || res.Written != 3 {
				t.Fatalf("with only notes.txt there: %+v, %v", res, err)
			}
			if got := contents(readTree(t, dst))["notes.txt"]; got != "the user's own" {
				t.Errorf("notes.txt = %q", got)
			}
		})
	}
}

// rebaseList writes a copy of the Resource List at path with its URIs
// under base: the resources served where the test serves them.
func rebaseList(t *testing.T, path, base string) string {
	h, urls := verifytest.ReadDoc(t, path)
	for i := range urls {
		urls[i].Loc = base + strings.TrimPrefix(urls[i].Loc, verifytest.BaseURL)
	}
	out := filepath.Join(t.TempDir(), layout.ResourceListName)
	verifytest.WriteDoc(t, out, h, urls)
	return out
}

// TestAdoptAndOverwrite: --adopt records the files that already hold
// their bitstream as rsdump's (a later deletion then removes them) and
// refuses to replace the others, leaving them; --overwrite replaces them.
func TestAdoptAndOverwrite(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, ownerFiles), pack.Options{})
	doc := filepath.Join(out, layout.DumpName)
	dst := t.TempDir()
	writeFiles(t, dst, map[string]string{"a.txt": "a1", "b.txt": "the user's b"})
	res, fs := run(t, doc, dst, unpack.Options{Adopt: true})
	if res.Present != 1 || res.Written != 1 || res.Refused != 1 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	if f, ok := find(fs, finding.Error, unpack.CheckConflict, "b.txt"); !ok || !strings.Contains(f.Msg, "--overwrite") {
		t.Errorf("b.txt not refused with a hint:\n%s", dump(fs))
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), map[string]string{"a.txt": "a1", "b.txt": "the user's b", "sub/c.txt": "c1"})

	// a.txt is rsdump's now: a Change Dump that deletes it removes it.
	p := verifytest.ChangePackage{From: fixedTime, Until: at(1, 0), Changes: []verifytest.File{
		change(resourcesync.ChangeDeleted, "a.txt", "", at(0, 10))}}
	writeState(t, dst, deststate.State{ResourceDumpAt: fixedTime})
	if res, fs := run(t, verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{p}), dst, unpack.Options{}); res.Deleted != 1 || res.Problems() != 0 {
		t.Fatalf("deleting the adopted a.txt: %+v\n%s", res, dump(fs))
	}
	if _, err := os.Stat(filepath.Join(dst, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the adopted a.txt was not deleted")
	}

	dst = t.TempDir()
	writeFiles(t, dst, map[string]string{"a.txt": "a1", "b.txt": "the user's b"})
	res, fs = run(t, doc, dst, unpack.Options{Overwrite: true})
	if res.Problems() != 0 || res.Written != 2 || res.Present != 1 {
		t.Fatalf("--overwrite: %+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), ownerFiles)
}

// TestForeignFileNotReplaced: after the first run, a file the user put
// where the Source later creates one is left as it was, the change
// refused and named, unless --overwrite; a file the Source deletes that
// rsdump has no record of is not deleted.
func TestForeignFileNotReplaced(t *testing.T) {
	t.Parallel()
	dst := baseline(t)
	writeFile(t, filepath.Join(dst, "x.txt"), []byte("the user's x"))
	writeFile(t, filepath.Join(dst, "y.txt"), []byte("y1"))
	p := verifytest.ChangePackage{From: fixedTime, Until: at(1, 0), Changes: []verifytest.File{
		change(resourcesync.ChangeCreated, "x.txt", "the Source's x", at(0, 10)),
		change(resourcesync.ChangeDeleted, "y.txt", "", at(0, 20)),
	}}
	doc := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{p})
	res, fs := run(t, doc, dst, unpack.Options{})
	for _, rel := range []string{"x.txt", "y.txt"} {
		if _, ok := find(fs, finding.Error, unpack.CheckConflict, rel); !ok {
			t.Errorf("%s: no conflict reported: %+v\n%s", rel, res, dump(fs))
		}
	}
	got := contents(readTree(t, dst))
	if got["x.txt"] != "the user's x" || got["y.txt"] != "y1" {
		t.Errorf("the user's files changed: %v", got)
	}
	res, fs = run(t, doc, dst, unpack.Options{Overwrite: true})
	if got := contents(readTree(t, dst))["x.txt"]; got != "the Source's x" || res.Written != 1 {
		t.Errorf("--overwrite: x.txt = %q, %+v\n%s", got, res, dump(fs))
	}
}
