package verify_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/verify"
)

// localDumpURL prefixes the documents and packages of dumps read from
// files: found beside the document by name, never fetched (and nothing
// listens there).
const localDumpURL = "http://127.0.0.1:1/dump/"

// indexFiles packs into three packages, one file each.
var indexFiles = map[string]string{
	"a.txt": strings.Repeat("a", 3000), "b.txt": strings.Repeat("b", 3000), "c.txt": strings.Repeat("c", 3000),
}

// packIndexed packs indexFiles into out, packages and documents under
// prefix, and turns resourcedump.xml into a Resource Dump Index over
// parts of at most per packages each, named as pack names them past
// 50,000 packages. It returns the part names.
func packIndexed(t *testing.T, out, prefix string, per int) []string {
	t.Helper()
	o := pack.Options{BaseURL: verifytest.BaseURL, DumpURL: prefix, At: fixedTime, Compress: pack.Store, MaxPackageSize: 4000}
	res, err := pack.Pack(t.Context(), tree(t, indexFiles), out, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Packages) != 3 {
		t.Fatalf("%d packages, want 3", len(res.Packages))
	}
	h, pkgs := verifytest.ReadDoc(t, filepath.Join(out, layout.DumpName))
	var parts []string
	var entries []resourcesync.URL
	for i := 0; i < len(pkgs); i += per {
		name := fmt.Sprintf("resourcedump-part%05d.xml", len(parts)+1)
		ph := h
		ph.Links = []resourcesync.Link{{Rel: "index", Href: prefix + layout.DumpName}}
		verifytest.WriteDoc(t, filepath.Join(out, name), ph, pkgs[i:min(i+per, len(pkgs))])
		parts = append(parts, name)
		entries = append(entries, resourcesync.URL{Loc: prefix + name, MD: &resourcesync.MD{At: h.MD.At, Completed: h.MD.Completed}})
	}
	ih := h
	ih.Kind = resourcesync.SitemapIndex
	verifytest.WriteDoc(t, filepath.Join(out, layout.DumpName), ih, entries)
	return parts
}

// TestVerifyIndex: a Resource Dump Index is followed to its parts, and
// every package of every part is verified: given as the directory, the
// index file, or the index's URL on a loopback server.
func TestVerifyIndex(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	defer srv.Close()
	packIndexed(t, out, srv.URL+"/", 2)
	for _, target := range []string{out, filepath.Join(out, layout.DumpName), srv.URL + "/" + layout.DumpName} {
		sum, fs := run(t, verify.Options{Client: client}, target)
		if sum.Problems() != 0 || sum.Warnings != 0 || sum.Packages != 3 || sum.Verified != 3 {
			t.Errorf("%s: %+v\n%s", target, sum, dump(fs))
		}
	}
	d, err := pkgread.LoadDump(t.Context(), client, filepath.Join(out, layout.DumpName), finding.NewReporter(nil))
	if err != nil {
		t.Fatal(err)
	}
	if d.Header.Kind != resourcesync.SitemapIndex || len(d.Packages) != 3 {
		t.Fatalf("LoadDump: kind %v, %d packages", d.Header.Kind, len(d.Packages))
	}
	for i, want := range []string{"resourcedump-part00001.xml", "resourcedump-part00001.xml", "resourcedump-part00002.xml"} {
		if p := d.Packages[i]; filepath.Base(p.Doc) != want || p.Loc != filepath.Join(out, fmt.Sprintf("resourcedump-%05d.zip", i+1)) {
			t.Errorf("package %d: listed by %s at %s, want %s", i+1, p.Doc, p.Loc, want)
		}
	}
}

// TestVerifyIndexBadParts: a part that cannot be read, that is itself an
// index, or that is a dump of another capability is an error naming it;
// the packages of the other parts are still verified, and a damaged
// package of a part is found.
func TestVerifyIndexBadParts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		damage func(t *testing.T, out, part string)
		check  string
		msg    string
		pkgs   int
	}{
		{"missing", func(t *testing.T, out, part string) { os.Remove(filepath.Join(out, part)) },
			finding.CheckMissing, "cannot be read", 2},
		{"nested index", func(t *testing.T, out, part string) {
			h, urls := verifytest.ReadDoc(t, filepath.Join(out, layout.DumpName))
			verifytest.WriteDoc(t, filepath.Join(out, part), h, urls)
		}, finding.CheckDocument, "an index listed by", 2},
		{"other capability", func(t *testing.T, out, part string) {
			h, urls := verifytest.ReadDoc(t, filepath.Join(out, part))
			h.MD.Capability = resourcesync.CapChangeDump
			verifytest.WriteDoc(t, filepath.Join(out, part), h, urls)
		}, finding.CheckDocument, "differs from", 2},
		{"damaged package", func(t *testing.T, out, part string) {
			zp := filepath.Join(out, "resourcedump-00003.zip")
			z, _ := os.ReadFile(zp)
			os.WriteFile(zp, verifytest.Flip(z, verifytest.MustIndex(t, z, []byte("ccc"))), 0o644)
		}, finding.CheckHash, "", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			parts := packIndexed(t, out, localDumpURL, 2)
			c.damage(t, out, parts[1])
			sum, fs := run(t, verify.Options{}, filepath.Join(out, layout.DumpName))
			f, ok := find(fs, finding.Error, c.check)
			if !ok || !strings.Contains(f.Msg, c.msg) {
				t.Fatalf("no %s error with %q:\n%s", c.check, c.msg, dump(fs))
			}
			if c.check != finding.CheckHash && !strings.Contains(f.Source+f.Path, parts[1]) {
				t.Errorf("the error does not name %s: %+v", parts[1], f)
			}
			if sum.Packages != c.pkgs {
				t.Errorf("%d packages verified, want %d\n%s", sum.Packages, c.pkgs, dump(fs))
			}
		})
	}
}

// TestVerifyIndexPartsWithoutUpLink: parts that do not link back to their
// index are still read once, through the index, when the directory is
// verified.
func TestVerifyIndexPartsWithoutUpLink(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	for _, name := range packIndexed(t, out, localDumpURL, 2) {
		p := filepath.Join(out, name)
		h, urls := verifytest.ReadDoc(t, p)
		h.Links = nil
		verifytest.WriteDoc(t, p, h, urls)
	}
	sum, fs := run(t, verify.Options{}, out)
	if sum.Problems() != 0 || sum.Packages != 3 || sum.Verified != 3 {
		t.Errorf("%+v\n%s", sum, dump(fs))
	}
}
