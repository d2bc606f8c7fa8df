package unpack_test

import (
	"archive/zip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/entryspool"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// atSurvey calls f with the survey's spools in dst once the survey ends,
// before any package is opened.
func atSurvey(t *testing.T, dst string, f func(spools []string)) {
	unpack.SetHook(func(point string, _ int) {
		if point == unpack.HookSurveyed {
			spools, _ := filepath.Glob(filepath.Join(dst, deststate.DirName, "tmp", ".rsdump-manifest-*.tmp"))
			f(spools)
		}
	})
	t.Cleanup(func() { unpack.SetHook(func(string, int) {}) })
}

// checkScratchEmpty fails the test if the run left anything in dst's
// scratch directory.
func checkScratchEmpty(t *testing.T, dst string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(dst, deststate.DirName, "tmp", "*")); len(left) != 0 {
		t.Errorf("left in the scratch directory: %v", left)
	}
}

// spoolTest packs 12 files into 3 packages and unpacks them into a new
// directory, letting meddle change the survey's spools of their entries
// before any package is opened.
func spoolTest(t *testing.T, meddle func(spools []string)) (src, dst string, res *unpack.Result, fs []finding.Finding) {
	t.Helper()
	src = tree(t, manyFiles(12, 10))
	out := packDir(t, src, pack.Options{MaxEntries: 4})
	dst = t.TempDir()
	seen := -1
	atSurvey(t, dst, func(spools []string) {
		seen = len(spools)
		meddle(spools)
	})
	res, fs = run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{})
	unpack.SetHook(func(string, int) {}) // a second run of the test's is left alone
	if seen != 3 {
		t.Fatalf("%d spools after the survey of 3 packages", seen)
	}
	checkScratchEmpty(t, dst)
	return src, dst, res, fs
}

func TestSurveySpoolsRead(t *testing.T) {
	src, dst, res, fs := spoolTest(t, func([]string) {})
	if res.Problems() != 0 || res.Written != 12 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))
}

// TestSurveySpoolsOfOtherBytes swaps the spools: no package takes
// entries decoded from another's manifest; each decodes its own.
func TestSurveySpoolsOfOtherBytes(t *testing.T) {
	src, dst, res, fs := spoolTest(t, func(s []string) {
		os.Rename(s[0], s[0]+".x")
		os.Rename(s[1], s[0])
		os.Rename(s[0]+".x", s[1])
	})
	if res.Problems() != 0 || res.Written != 12 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))
}

// TestSurveySpoolsDamaged changes a byte of an entry in every spool: the
// damage is told by the CRC before any entry is used, and each package
// decodes its own manifest instead.
func TestSurveySpoolsDamaged(t *testing.T) {
	src, dst, res, fs := spoolTest(t, func(spools []string) {
		for _, s := range spools {
			b, _ := os.ReadFile(s)
			b[3] ^= 1 // in the first entry's <loc>
			os.WriteFile(s, b, 0o600)
		}
	})
	if res.Problems() != 0 || res.Written != 12 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))
}

// TestSurveySpoolsUsed rewrites each spool, intact and of its manifest's
// bytes, with other mtimes: the files get them, so staging took the
// entries from the spools, not from the manifests.
func TestSurveySpoolsUsed(t *testing.T) {
	moved := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	_, dst, res, fs := spoolTest(t, func(spools []string) {
		for _, s := range spools {
			rewriteSpool(t, s, func(u *resourcesync.URL) { u.Lastmod = moved })
		}
	})
	if res.Problems() != 0 || res.Written != 12 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	for name, v := range readTree(t, dst) {
		if mtime := v[strings.LastIndex(v, "@")+1 : strings.LastIndex(v, " ")]; mtime != moved.Format(time.RFC3339Nano) {
			t.Errorf("%s: mtime %s, want the spool's %s", name, mtime, moved)
		}
	}
}

// rewriteSpool rewrites the spool at name, of the same source, with
// change applied to every entry.
func rewriteSpool(t *testing.T, name string, change func(*resourcesync.URL)) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	src := entryspool.Source(b[len(b)-32:]) // the trailer ends with it
	r, err := entryspool.Open[resourcesync.URL](name, src)
	if err != nil {
		t.Fatal(err)
	}
	w, err := entryspool.Create[resourcesync.URL](filepath.Dir(name), "rewrite-*")
	if err != nil {
		t.Fatal(err)
	}
	for {
		u, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		change(&u)
		w.Add(u)
	}
	r.Close()
	if err := w.Close(src); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w.Name(), name); err != nil {
		t.Fatal(err)
	}
}

// TestSurveySpoolBudget: once the spools take the budget, the packages
// surveyed after are not spooled, and are decoded again when staged.
func TestSurveySpoolBudget(t *testing.T) {
	unpack.SetSpoolBudget(t, 1) // the first spool spends it
	src := tree(t, manyFiles(12, 10))
	out := packDir(t, src, pack.Options{MaxEntries: 4})
	dst := t.TempDir()
	spools := -1
	atSurvey(t, dst, func(s []string) { spools = len(s) })
	res, fs := run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{Jobs: 1})
	if spools != 1 {
		t.Errorf("%d spools for 3 packages and a budget the first spends", spools)
	}
	if res.Problems() != 0 || res.Written != 12 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))
}

// TestSurveySpoolsRemote: the survey of a remote dump reads each
// package's detached manifest, and its spool serves the package once
// downloaded (the detached manifest holds the same bytes).
func TestSurveySpoolsRemote(t *testing.T) {
	out := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	t.Cleanup(srv.Close)
	src := tree(t, manyFiles(12, 10))
	o := pack.Options{BaseURL: verifytest.BaseURL, DumpURL: srv.URL + "/", At: fixedTime, MaxEntries: 4}
	if _, err := pack.Pack(t.Context(), src, out, o); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	spools := -1
	atSurvey(t, dst, func(s []string) { spools = len(s) })
	res, fs := run(t, srv.URL+"/"+layout.DumpName, dst, unpack.Options{Client: client})
	if spools != 3 {
		t.Errorf("%d spools after the survey of 3 remote packages", spools)
	}
	if res.Problems() != 0 || res.Written != 12 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))
	checkScratchEmpty(t, dst)
}

// TestSurveyIndexManifest: a package whose manifest.xml is a
// <sitemapindex> naming a part beside the package holds no manifest of
// its own. The survey neither follows the index nor spools the part's
// entries as the package's, so none of them is written; the package's
// bitstreams are reported as listed by no manifest.
func TestSurveyIndexManifest(t *testing.T) {
	files := []verifytest.File{{Rel: "a.txt", Data: "a"}, {Rel: "b.txt", Data: "b"}}
	_, manifest := verifytest.Package(t, files)
	index := verifytest.Encode(t, resourcesync.Header{Kind: resourcesync.SitemapIndex, MD: verifytest.ResourceMD()},
		[]resourcesync.URL{{Loc: verifytest.BaseURL + "dumps/part.xml"}})
	z1 := verifytest.Zip(t, []verifytest.Entry{
		{Name: "resources/a.txt", Data: []byte("a"), Method: zip.Store},
		{Name: "resources/b.txt", Data: []byte("b"), Method: zip.Store},
		{Name: "manifest.xml", Data: index, Method: zip.Store},
	})
	z2, _ := verifytest.Package(t, []verifytest.File{{Rel: "c.txt", Data: "c"}})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "part.xml"), manifest) // where the index's part resolves
	doc := verifytest.ResourceDump(t, dir, z1, z2)
	dst := t.TempDir()
	spools := -1
	atSurvey(t, dst, func(s []string) { spools = len(s) })
	res, fs := run(t, doc, dst, unpack.Options{})
	if spools != 1 {
		t.Errorf("%d spools, want one: the index's part is not the package's manifest", spools)
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), map[string]string{"c.txt": "c"})
	if _, ok := find(fs, finding.Error, finding.CheckOrphan, "resources/a.txt"); !ok || res.Written != 1 {
		t.Errorf("want a.txt reported as in no manifest, c.txt alone written: %+v\n%s", res, dump(fs))
	}
}
