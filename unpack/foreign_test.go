package unpack_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
)

// TestForeignCountsAll: a first run refused over files it did not write
// says how many there are and names the first ten, through a dump, a
// Resource List and --only alike, and nothing lands.
func TestForeignCountsAll(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 14 {
		files[fmt.Sprintf("d/f%02d.txt", i)] = fmt.Sprintf("file %d", i)
	}
	out := packDir(t, tree(t, files), pack.Options{MaxEntries: 5})
	srv := httptest.NewServer(http.StripPrefix("/rs/", http.FileServer(http.Dir(tree(t, files)))))
	defer srv.Close()
	list := rebaseList(t, filepath.Join(out, layout.ResourceListName), srv.URL+"/rs/")
	lm, _ := deststate.NewMapper(deststate.ByURI, srv.URL+"/rs/")
	for _, c := range []struct {
		name  string
		apply func(dst string) (*unpack.Result, error)
	}{
		{"Resource Dump", func(dst string) (*unpack.Result, error) {
			return unpack.Unpack(context.Background(), filepath.Join(out, layout.DumpName), dst, unpack.Options{Mapper: mapper(t)})
		}},
		{"only", func(dst string) (*unpack.Result, error) {
			return unpack.Unpack(context.Background(), filepath.Join(out, layout.DumpName), dst, unpack.Options{Mapper: mapper(t), Only: []string{"d"}})
		}},
		{"Resource List", func(dst string) (*unpack.Result, error) {
			return unpack.ApplyList(context.Background(), list, dst, unpack.Options{Mapper: lm, Client: srv.Client()})
		}},
	} {
		dst := t.TempDir()
		mine := map[string]string{}
		for i := 1; i < 14; i++ { // 12 of them, but not the first
			if i != 7 {
				mine[fmt.Sprintf("d/f%02d.txt", i)] = "the user's"
			}
		}
		writeFiles(t, dst, mine)
		_, err := c.apply(dst)
		var fe *unpack.ForeignError
		if !errors.As(err, &fe) || fe.Count != 12 || len(fe.Paths) != unpack.ForeignNamed || fe.Paths[0] != "d/f01.txt" || fe.Path != fe.Paths[0] ||
			!strings.Contains(err.Error(), "12 files already exist") || !strings.Contains(err.Error(), "d/f01.txt, d/f02.txt") || !strings.Contains(err.Error(), "and 2 more") {
			t.Errorf("%s: %v (%+v), want 12 foreign files, the first ten named", c.name, err, fe)
		}
		equalMaps(t, c.name, contents(readTree(t, dst)), mine)
		if _, err := os.Stat(filepath.Join(dst, ".rsdump", "state.json")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a refused run left a state (%v)", c.name, err)
		}
	}
}
