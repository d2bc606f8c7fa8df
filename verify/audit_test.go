package verify_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/verify"
)

var auditFiles = map[string]string{"a.txt": "alpha\n", "d/b.txt": "bravo\n", "d/e/c.txt": "charlie\n"}

// audit runs verify.Audit of dir against the document at against, mapping
// URIs under verifytest.BaseURL.
func audit(t *testing.T, dir, against string) (*verify.Summary, []finding.Finding) {
	t.Helper()
	m, err := deststate.NewMapper(deststate.ByURI, verifytest.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	var fs []finding.Finding
	sum, err := verify.Audit(context.Background(), dir, against, m, verify.Options{Client: client, Events: finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })})
	if err != nil {
		t.Fatalf("Audit: %v", err)
	}
	return sum, fs
}

// writeResourceList writes the entries of a manifest as a Resource List.
func writeResourceList(t *testing.T, path string, urls []resourcesync.URL) {
	t.Helper()
	verifytest.WriteDoc(t, path, resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: fixedTime}}, urls)
}

// TestAuditGood: a tree that is what the document describes passes,
// whichever document describes it: the dump (through its detached
// manifests, or through its packages when they are gone), a manifest, a
// Resource List, a Resource List index, a dump index, or the dump's URL.
// rsdump's state directory is not part of the tree.
func TestAuditGood(t *testing.T) {
	t.Parallel()
	src := tree(t, auditFiles)
	out := packDir(t, src, pack.Options{})
	os.MkdirAll(filepath.Join(src, deststate.DirName), 0o755)
	os.WriteFile(filepath.Join(src, deststate.DirName, "state.json"), []byte("{}"), 0o644)
	manifest := filepath.Join(out, "resourcedump-00001.manifest.xml")
	_, entries := verifytest.ReadDoc(t, manifest)
	docs := t.TempDir()
	rl := filepath.Join(docs, "resourcelist.xml")
	writeResourceList(t, rl, entries)
	writeResourceList(t, filepath.Join(docs, "rl-1.xml"), entries[:1])
	writeResourceList(t, filepath.Join(docs, "rl-2.xml"), entries[1:])
	rli := filepath.Join(docs, "resourcelist-index.xml")
	verifytest.WriteDoc(t, rli, resourcesync.Header{Kind: resourcesync.SitemapIndex, MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: fixedTime}},
		[]resourcesync.URL{{Loc: localDumpURL + "rl-1.xml"}, {Loc: localDumpURL + "rl-2.xml"}})

	served := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(served)))
	defer srv.Close()
	if _, err := pack.Pack(t.Context(), tree(t, auditFiles), served, pack.Options{BaseURL: verifytest.BaseURL, DumpURL: srv.URL + "/", At: fixedTime}); err != nil {
		t.Fatal(err)
	}

	indexed := t.TempDir()
	packIndexedFiles(t, indexed, auditFiles)

	noDetached := packDir(t, tree(t, auditFiles), pack.Options{})
	os.Remove(filepath.Join(noDetached, "resourcedump-00001.manifest.xml"))

	for name, against := range map[string]string{
		"dump": filepath.Join(out, layout.DumpName), "manifest": manifest, "resource list": rl, "resource list index": rli,
		"dump index": filepath.Join(indexed, layout.DumpName), "dump URL": srv.URL + "/" + layout.DumpName,
		"dump without detached manifests": filepath.Join(noDetached, layout.DumpName),
	} {
		sum, fs := audit(t, src, against)
		if sum.Problems() != 0 || sum.Bitstreams != 3 || sum.Verified != 3 {
			t.Errorf("%s: %+v\n%s", name, sum, dump(fs))
		}
	}
}

// packIndexedFiles packs files one a package and turns the dump into an
// index over two parts.
func packIndexedFiles(t *testing.T, out string, files map[string]string) {
	t.Helper()
	o := pack.Options{BaseURL: verifytest.BaseURL, DumpURL: localDumpURL, At: fixedTime, MaxPackageSize: 1}
	if _, err := pack.Pack(t.Context(), tree(t, files), out, o); err != nil {
		t.Fatal(err)
	}
	h, pkgs := verifytest.ReadDoc(t, filepath.Join(out, layout.DumpName))
	ph := h
	ph.Links = []resourcesync.Link{{Rel: "index", Href: localDumpURL + layout.DumpName}}
	verifytest.WriteDoc(t, filepath.Join(out, "resourcedump-part00001.xml"), ph, pkgs[:1])
	verifytest.WriteDoc(t, filepath.Join(out, "resourcedump-part00002.xml"), ph, pkgs[1:])
	h.Kind = resourcesync.SitemapIndex
	verifytest.WriteDoc(t, filepath.Join(out, layout.DumpName), h, []resourcesync.URL{
		{Loc: localDumpURL + "resourcedump-part00001.xml"}, {Loc: localDumpURL + "resourcedump-part00002.xml"}})
}

// TestAuditFindsDifferences: a file changed (same length, or not),
// missing or extra is an error naming it; the rest of the tree verifies.
func TestAuditFindsDifferences(t *testing.T) {
	t.Parallel()
	files := map[string]string{"same.txt": "same\n", "flip.txt": "original\n", "longer.txt": "short\n", "gone.txt": "gone\n"}
	against := filepath.Join(packDir(t, tree(t, files), pack.Options{}), layout.DumpName)
	dst := tree(t, files)
	os.WriteFile(filepath.Join(dst, "flip.txt"), []byte("Original\n"), 0o644)
	os.WriteFile(filepath.Join(dst, "longer.txt"), []byte("not short\n"), 0o644)
	os.Remove(filepath.Join(dst, "gone.txt"))
	os.MkdirAll(filepath.Join(dst, "new"), 0o755)
	os.WriteFile(filepath.Join(dst, "new", "extra.txt"), []byte("extra\n"), 0o644)
	sum, fs := audit(t, dst, against)
	want := []string{"extra new/extra.txt", "hash flip.txt", "length longer.txt", "missing gone.txt"}
	if got := errorsOf(fs); !slices.Equal(got, want) {
		t.Errorf("errors %q, want %q\n%s", got, want, dump(fs))
	}
	if sum.Verified != 1 {
		t.Errorf("%d verified, want 1 (same.txt)", sum.Verified)
	}
	if f, ok := find(fs, finding.Error, finding.CheckHash); !ok || f.Expected == f.Actual || !strings.HasPrefix(f.Expected, "sha-256:") {
		t.Errorf("hash finding does not give both digests: %+v", f)
	}
}

// TestAuditRefuses: a document that is not a listing, or that cannot be
// read, or a tree that does not exist, is an error, not a report.
func TestAuditRefuses(t *testing.T) {
	t.Parallel()
	src := tree(t, auditFiles)
	capList := filepath.Join(t.TempDir(), "capabilitylist.xml")
	verifytest.WriteDoc(t, capList, resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapCapabilityList}}, nil)
	m, _ := deststate.NewMapper(deststate.ByURI, verifytest.BaseURL)
	for _, c := range []struct{ dir, against, want string }{
		{src, capList, "cannot audit against"},
		{src, filepath.Join(t.TempDir(), "none.xml"), "none.xml"},
		{filepath.Join(t.TempDir(), "nodir"), capList, "nodir"},
	} {
		_, err := verify.Audit(context.Background(), c.dir, c.against, m, verify.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Audit(%s, %s) = %v, want an error with %q", c.dir, c.against, err, c.want)
		}
	}
}
