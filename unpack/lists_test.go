package unpack_test

import (
	"archive/zip"
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
	"github.com/rsdump/rsdump/verify/verifytest"
)

// TestListBatches: a Change List applied two entries at a time gives the
// tree and findings it gives whole: the last change of a resource wins
// across batches (its earlier version, no longer served, is not
// fetched), a change the state says is applied is skipped and said so
// once, and the state moves to the list's until.
func TestListBatches(t *testing.T) {
	unpack.SetListBatch(t, 2)
	res := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(res)))
	defer srv.Close()
	base, dir := srv.URL+"/res/", t.TempDir()
	m, err := verify.NewMapper(verify.ByURI, base)
	if err != nil {
		t.Fatal(err)
	}
	entry := func(rel, data, change string, h int) resourcesync.URL {
		when := fixedTime.Add(time.Duration(h) * time.Hour)
		md := &resourcesync.MD{Change: change, Datetime: when}
		if change != resourcesync.ChangeDeleted {
			md.Hash, md.Length = "sha-256:"+verifytest.SHA256([]byte(data)), resourcesync.Int64(int64(len(data)))
		}
		return resourcesync.URL{Loc: base + rel, Lastmod: when, MD: md}
	}
	apply := func(name string, md resourcesync.MD, served map[string]string, urls ...resourcesync.URL) (*unpack.Result, []finding.Finding) {
		t.Helper()
		os.RemoveAll(filepath.Join(res, "res"))
		writeFiles(t, filepath.Join(res, "res"), served)
		doc := filepath.Join(t.TempDir(), name)
		verifytest.WriteDoc(t, doc, resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, urls)
		var fs []finding.Finding
		r, err := unpack.ApplyList(context.Background(), doc, dir, unpack.Options{Mapper: m, Client: srv.Client(),
			Events: finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r, fs
	}
	r, fs := apply("resourcelist.xml", resourcesync.MD{Capability: resourcesync.CapResourceList, At: fixedTime},
		map[string]string{"a": "a0", "b": "b0", "c": "c0"},
		entry("a", "a0", "", 0), entry("b", "b0", "", 0), entry("c", "c0", "", 0))
	if r.Problems() != 0 || r.Written != 3 {
		t.Fatalf("baseline: %+v\n%s", r, dump(fs))
	}
	until := fixedTime.Add(3 * time.Hour)
	r, fs = apply("changelist.xml", resourcesync.MD{Capability: resourcesync.CapChangeList, From: fixedTime, Until: until},
		map[string]string{"a": "a2", "c": "c0", "d": "d1"},
		entry("c", "c-1", resourcesync.ChangeUpdated, -1), // applied before: the baseline is later
		entry("a", "a1", resourcesync.ChangeUpdated, 1),
		entry("b", "b1", resourcesync.ChangeUpdated, 1),
		entry("d", "d1", resourcesync.ChangeCreated, 1),
		entry("a", "a2", resourcesync.ChangeUpdated, 2),
		entry("b", "", resourcesync.ChangeDeleted, 2))
	if r.Problems() != 0 || r.Written != 2 || r.Deleted != 1 {
		t.Fatalf("changes: %+v\n%s", r, dump(fs))
	}
	equalMaps(t, "tree", contents(readTree(t, dir)), map[string]string{"a": "a2", "c": "c0", "d": "d1"})
	skipped := 0
	for _, f := range fs {
		if f.Code == unpack.CheckSkipped {
			skipped++
		}
	}
	if skipped != 1 {
		t.Errorf("%d findings of changes applied before, want 1\n%s", skipped, dump(fs))
	}
	if s := readState(t, dir); !s.ChangeDumpUntil.Equal(until) {
		t.Errorf("until %v, want %v", s.ChangeDumpUntil, until)
	}
}

// TestFailedBitstreamLeavesNoDirectory: a package's bitstream that fails
// its hash leaves no directory behind, also where it shares a new
// directory with a bitstream that lands (which moves it into the tree
// whole).
func TestFailedBitstreamLeavesNoDirectory(t *testing.T) {
	files := []verifytest.File{{Rel: "a/ok.txt", Data: "lands"}, {Rel: "a/b/c/bad.txt", Data: "fails its hash"}}
	var urls []resourcesync.URL
	for _, f := range files {
		urls = append(urls, verifytest.URLFor(f, "/resources/"))
	}
	manifest := verifytest.Manifest(t, verifytest.ResourceMD(), urls)
	z := verifytest.Zip(t, []verifytest.Entry{
		{Name: "resources/a/ok.txt", Data: []byte("lands"), Method: zip.Store},
		{Name: "resources/a/b/c/bad.txt", Data: []byte("fails its HASH"), Method: zip.Store},
		{Name: "manifest.xml", Data: manifest, Method: zip.Deflate},
	})
	dir := t.TempDir()
	r, found := run(t, writeFile(t, filepath.Join(t.TempDir(), "p.zip"), z), dir, unpack.Options{})
	if r.Written != 1 || r.Refused != 1 {
		t.Fatalf("%+v\n%s", r, dump(found))
	}
	var dirs []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch rel, _ := filepath.Rel(dir, p); {
		case err != nil || rel == "." || !d.IsDir():
		case rel == verify.StateDir:
			return filepath.SkipDir
		default:
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return err
	})
	if len(dirs) != 1 || dirs[0] != "a" {
		t.Errorf("directories in the tree: %v, want [a]", dirs)
	}
}
