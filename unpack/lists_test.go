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

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// changeSource serves the files of each list applied from loopback and
// applies the list to dir, for tests of Change Lists.
type changeSource struct {
	t         *testing.T
	res       string // the served directory; its res/ holds the resources
	base, dir string
	srv       *httptest.Server
	m         deststate.Mapper
}

func newChangeSource(t *testing.T) *changeSource {
	c := &changeSource{t: t, res: t.TempDir(), dir: t.TempDir()}
	c.srv = httptest.NewServer(http.FileServer(http.Dir(c.res)))
	t.Cleanup(c.srv.Close)
	c.base = c.srv.URL + "/res/"
	m, err := deststate.NewMapper(deststate.ByURI, c.base)
	if err != nil {
		t.Fatal(err)
	}
	c.m = m
	return c
}

// entry is a change of rel to data at h hours after fixedTime.
func (c *changeSource) entry(rel, data, change string, h int) resourcesync.URL {
	when := fixedTime.Add(time.Duration(h) * time.Hour)
	md := &resourcesync.MD{Change: change, Datetime: when}
	if change != resourcesync.ChangeDeleted {
		md.Hash, md.Length = "sha-256:"+verifytest.SHA256([]byte(data)), resourcesync.Int64(int64(len(data)))
	}
	return resourcesync.URL{Loc: c.base + rel, Lastmod: when, MD: md}
}

// apply serves served (path → content) and applies the list document
// name of urls.
func (c *changeSource) apply(name string, md resourcesync.MD, served map[string]string, urls ...resourcesync.URL) (*unpack.Result, []finding.Finding) {
	t := c.t
	t.Helper()
	os.RemoveAll(filepath.Join(c.res, "res"))
	writeFiles(t, filepath.Join(c.res, "res"), served)
	doc := filepath.Join(t.TempDir(), name)
	verifytest.WriteDoc(t, doc, resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, urls)
	var fs []finding.Finding
	r, err := unpack.ApplyList(context.Background(), doc, c.dir, unpack.Options{Mapper: c.m, Client: c.srv.Client(),
		Events: finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r, fs
}

// TestListBatches: a Change List applied two entries at a time gives the
// tree and findings it gives whole: the last change of a resource wins
// across batches (its earlier version, no longer served, is not
// fetched), a change the state says is applied is skipped and said so
// once, and the state moves to the list's until.
func TestListBatches(t *testing.T) {
	unpack.SetListBatch(t, 2)
	c := newChangeSource(t)
	entry, apply, dir := c.entry, c.apply, c.dir
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
	t.Parallel()
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
		case rel == deststate.DirName:
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
