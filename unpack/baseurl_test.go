package unpack_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
)

// TestBaseURLAsTyped: a base URL with a space and non-ASCII, given the
// same way to pack and to unpack, restores the tree, although the
// manifest carries it percent-encoded.
func TestBaseURLAsTyped(t *testing.T) {
	t.Parallel()
	const base = "http://127.0.0.1:1/my files/café/"
	files := map[string]string{"a b.txt": "a", "d/ü.txt": "u"}
	out := t.TempDir()
	if _, err := pack.Pack(context.Background(), tree(t, files), out, pack.Options{BaseURL: base, At: fixedTime}); err != nil {
		t.Fatal(err)
	}
	m, err := deststate.NewMapper(deststate.ByURI, base)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	res, fs := run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{Mapper: m})
	if res.Problems() != 0 || res.Written != 2 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), files)
}

// TestWrongBaseURL: a base URL no bitstream is under is an error before
// anything lands, naming the base URL the Source packed with.
func TestWrongBaseURL(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	if _, err := pack.Pack(context.Background(), tree(t, map[string]string{"a.txt": "a", "d/b.txt": "b"}), out,
		pack.Options{BaseURL: "http://127.0.0.1:1/packed/", At: fixedTime}); err != nil {
		t.Fatal(err)
	}
	m, err := deststate.NewMapper(deststate.ByURI, "http://127.0.0.1:1/other/")
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	_, err = unpack.Unpack(context.Background(), filepath.Join(out, layout.DumpName), dst, unpack.Options{Mapper: m})
	if !errors.Is(err, unpack.ErrBaseURL) || !strings.Contains(err.Error(), "the Source's base URL is http://127.0.0.1:1/packed/") {
		t.Fatalf("%v, want ErrBaseURL naming the Source's base URL", err)
	}
	if got := readTree(t, dst); len(got) != 0 {
		t.Errorf("files landed: %v", got)
	}
}
