package replica_test

import (
	"archive/zip"
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc/httpctest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/unpack"
)

// repackTree is a Source tree of random files in several packages, with
// a file that will become a directory and a directory that will become a
// file.
func repackTree() map[string]string {
	f := randomFiles(60, 20000)
	f["x/y.bin"] = strings.Repeat("y", 3000)
	f["z.bin"] = strings.Repeat("z", 3000)
	return f
}

// repack changes the Source's tree as a month of work would (files
// changed, added, deleted; a directory become a file and a file a
// directory) and packs it again, a full Resource Dump, no --changes.
func repack(p *packed, o pack.Options) {
	p.write(map[string]string{
		"d0/f0000.bin": strings.Repeat("changed 0 ", 1500),
		"d3/f0010.bin": strings.Repeat("changed 10 ", 1800),
		"new/a.bin":    strings.Repeat("new a ", 900),
		"d1/f0001.bin": "", "d2/f0002.bin": "",
		"x": "", "z.bin": "",
	})
	p.write(map[string]string{"x": "x is a file now", "z.bin/w.bin": "z.bin is a directory now"})
	p.pack(false, o)
}

// TestRepackReachesDestination: a Source that publishes only full
// Resource Dumps (re-packed, no --changes) reaches its Destination: the
// second sync re-bases the tree to the new dump exactly (changed and new
// files written, deleted ones removed, a directory become a file and a
// file a directory in the same run, a file of the user's own kept), its
// dry run plans the same, and only the bitstreams that differ are
// fetched, from inside the packages by ranges: a small part of the
// dump's bytes, counted at the server. A third sync is up to date and
// fetches nothing.
func TestRepackReachesDestination(t *testing.T) {
	t.Parallel()
	p := newPacked(t, repackTree())
	o := pack.Options{Compress: pack.Store, MaxPackageSize: 300000}
	p.pack(false, o)
	dst := t.TempDir()
	if res, fs, _ := syncRun(t, p.capabilities(), dst, replica.Options{}); res.Problems() != 0 {
		t.Fatalf("first sync: %+v\n%s", res, problems(fs))
	}
	verifytest.WriteFiles(t, dst, map[string]string{"mine.txt": "the user's own"})
	repack(p, o)
	dumpBytes := dumpLength(t, p.out)

	p.zipBytes.Store(0)
	dry, fs, _ := syncRun(t, "", dst, replica.Options{DryRun: true})
	if dry.Problems() != 0 || p.zipBytes.Load() != 0 {
		t.Errorf("dry run: %+v, %d package bytes served\n%s", dry, p.zipBytes.Load(), problems(fs))
	}
	res, fs, notes := syncRun(t, "", dst, replica.Options{})
	served := p.zipBytes.Load()
	if res.Problems() != 0 || len(res.Steps) != 1 || res.Steps[0].Kind != "rebase" {
		t.Fatalf("re-base: %+v steps %+v\n%s\n%s", res, res.Steps, strings.Join(notes, "\n"), problems(fs))
	}
	want := verifytest.ReadTree(t, p.src)
	want["mine.txt"] = "the user's own"
	sameTree(t, dst, want)
	if res.Written != 5 || res.Deleted != 4 {
		t.Errorf("re-base wrote %d and deleted %d, want 5 and 4", res.Written, res.Deleted)
	}
	if d, r := dry.Result, res.Result; d.Written != r.Written || d.Deleted != r.Deleted || d.Present != r.Present || d.Bytes != r.Bytes {
		t.Errorf("dry run planned %+v, the run did %+v", d, r)
	}
	if served == 0 || served > dumpBytes/10 {
		t.Errorf("the re-base was served %d package bytes of %d", served, dumpBytes)
	}
	t.Logf("re-base: %d of %d package bytes served", served, dumpBytes)
	st, err := deststate.Read(dst)
	if err != nil || st.Unfinished != nil || !st.ResourceDumpAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("state after the re-base: %+v (%v)", st, err)
	}

	p.zipBytes.Store(0)
	again, fs, _ := syncRun(t, "", dst, replica.Options{})
	if again.Problems() != 0 || len(again.Steps) != 0 || p.zipBytes.Load() != 0 {
		t.Errorf("third sync: %+v steps %+v, %d package bytes\n%s", again, again.Steps, p.zipBytes.Load(), problems(fs))
	}
}

// dumpLength is the bytes of the packages the dump in out lists.
func dumpLength(t *testing.T, out string) int64 {
	t.Helper()
	_, urls := verifytest.ReadDoc(t, filepath.Join(out, layout.DumpName))
	var n int64
	for _, u := range urls {
		n += *u.MD.Length
	}
	return n
}

// TestRebaseFetchesMostlyChangedPackageWhole: a package most of whose
// bytes changed is fetched whole, through the streaming path (every byte
// of it served), the others not at all; the tree is the new dump's.
func TestRebaseFetchesMostlyChangedPackageWhole(t *testing.T) {
	t.Parallel()
	p := newPacked(t, randomFiles(42, 20000))
	o := pack.Options{Compress: pack.Store, MaxPackageSize: 300000}
	p.pack(false, o)
	dst := t.TempDir()
	syncRun(t, p.capabilities(), dst, replica.Options{})
	_, urls := verifytest.ReadDoc(t, filepath.Join(p.out, layout.DumpName))
	changes := map[string]string{}
	for rel, data := range randomFiles(42, 20000) {
		if strings.HasPrefix(rel, "d0/") {
			changes[rel] = strings.ToUpper(data[:10]) + data[10:] + "more"
		}
	}
	p.write(changes)
	p.pack(false, o)
	p.zipBytes.Store(0)
	res, fs, _ := syncRun(t, "", dst, replica.Options{})
	if res.Problems() != 0 || res.Written != len(changes) {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, verifytest.ReadTree(t, p.src))
	first := *urls[0].MD.Length // d0's files come first, with a few of d1's
	if served := p.zipBytes.Load(); served < first || served > first+first/4 {
		t.Errorf("served %d package bytes, want the first package whole (%d) and little more", served, first)
	}
}

// TestRelistReachesDestination: a Source with only a Resource List that
// publishes a newer one reaches its Destination: the tree is made
// exactly the new list (a directory become a file and a file a directory
// in the same run), and only the resources whose hash or length differ
// from what rsdump wrote are fetched, counted at the server.
func TestRelistReachesDestination(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(40, 3000))
	s.files["q/r.txt"] = "q is a directory"
	s.files["u.txt"] = "u is a file"
	var fetched atomic.Int64
	s.handler = func(h http.Handler) http.Handler {
		counted := httpctest.Counting(h, "", &fetched)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/res/") {
				counted.ServeHTTP(w, r)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	s.publishResources()
	dst := t.TempDir()
	syncRun(t, s.srv.URL+"/", dst, replica.Options{})

	s.files["d0/f000.txt"] = "changed"
	s.files["new/n.txt"] = "new"
	delete(s.files, "d1/f001.txt")
	delete(s.files, "q/r.txt")
	delete(s.files, "u.txt")
	s.files["q"] = "q is a file now"
	s.files["u.txt/v.txt"] = "u.txt is a directory now"
	s.at = t0.Add(time.Hour)
	s.publishResources()
	fetched.Store(0)
	res, fs, notes := syncRun(t, "", dst, replica.Options{})
	if res.Problems() != 0 || len(res.Steps) != 1 || res.Steps[0].Kind != "rebase" || res.Written != 4 || res.Deleted != 3 {
		t.Fatalf("%+v steps %+v\n%s\n%s", res, res.Steps, strings.Join(notes, "\n"), problems(fs))
	}
	sameTree(t, dst, s.files)
	if n := fetched.Load(); n != int64(len("changed")+len("new")+len("q is a file now")+len("u.txt is a directory now")) {
		t.Errorf("fetched %d bytes of resources, want only the 4 new versions'", n)
	}
}

// TestRerunAfterRefusedFileFetchesOnlyIt: a first sync that refuses one
// bitstream (damaged at the Source; the dump document gives no hash for
// its package, so the rest of the package lands) leaves the tree with no
// snapshot; once the Source is repaired, the next sync fetches that
// bitstream alone, by ranges, not the packages whose files are all in
// place, counted at the server.
func TestRerunAfterRefusedFileFetchesOnlyIt(t *testing.T) {
	t.Parallel()
	p := newPacked(t, randomFiles(30, 20000))
	p.pack(false, pack.Options{Compress: pack.Store, MaxPackageSize: 300000})
	doc := filepath.Join(p.out, layout.DumpName)
	h, urls := verifytest.ReadDoc(t, doc)
	urls[0].MD.Hash = ""
	verifytest.WriteDoc(t, doc, h, urls)
	zipPath := filepath.Join(p.out, filepath.Base(urls[0].Loc))
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	off, err := zr.File[0].DataOffset()
	zr.Close()
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(good)
	bad[off+100] ^= 0xff
	write(t, zipPath, bad)

	dst := t.TempDir()
	first, fs, _ := syncRun(t, p.capabilities(), dst, replica.Options{})
	if first.Refused != 1 || first.Written != 29 {
		t.Fatalf("first sync: %+v\n%s", first, problems(fs))
	}
	write(t, zipPath, good)
	p.zipBytes.Store(0)
	res, fs, _ := syncRun(t, "", dst, replica.Options{})
	if res.Problems() != 0 || res.Written != 1 || res.Present != 29 {
		t.Fatalf("rerun: %+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, verifytest.ReadTree(t, p.src))
	if n := p.zipBytes.Load(); n > 3*20000 {
		t.Errorf("the rerun was served %d package bytes for one 20,000-byte bitstream", n)
	}
}

// changedSource syncs a copy of a Source of 42 random files, packed in
// packages of at most maxPackage bytes, then changes the Source (change
// gives a file's new content from its old; "" removes it) and packs it
// again. It returns the Source and the copy, for a re-base to come.
func changedSource(t *testing.T, maxPackage int64, change func(rel, data string) string) (*packed, string) {
	t.Helper()
	p := newPacked(t, randomFiles(42, 20000))
	o := pack.Options{Compress: pack.Store, MaxPackageSize: maxPackage}
	p.pack(false, o)
	dst := t.TempDir()
	syncRun(t, p.capabilities(), dst, replica.Options{})
	changes := map[string]string{}
	for rel, data := range randomFiles(42, 20000) {
		if c := change(rel, data); c != data {
			changes[rel] = c
		}
	}
	p.write(changes)
	p.pack(false, o)
	return p, dst
}

// refusedRebase is changedSource in three packages, with local written
// into the copy (files changed at the Destination) and the first
// package's manifest made other than its detached copy.
func refusedRebase(t *testing.T, change func(rel, data string) string, local map[string]string) (*packed, string) {
	t.Helper()
	p, dst := changedSource(t, 300000, change)
	verifytest.WriteFiles(t, dst, local)
	_, urls := verifytest.ReadDoc(t, filepath.Join(p.out, layout.DumpName))
	l, _ := urls[0].Link("contents")
	manifest := filepath.Join(p.out, filepath.Base(l.Href))
	h, entries := verifytest.ReadDoc(t, manifest)
	entries[len(entries)-1].MD.Hash = "sha-256:" + strings.Repeat("0", 64)
	verifytest.WriteDoc(t, manifest, h, entries)
	return p, dst
}

// TestRebaseRefusesDetachedManifestNotThePackages: a package fetched
// whole in a re-base is applied only when its own manifest is the
// detached copy its actions were planned from: one that differs is
// refused whole, naming it, and the tree, where a later package's
// changes landed, stays half-applied, reported.
func TestRebaseRefusesDetachedManifestNotThePackages(t *testing.T) {
	t.Parallel()
	_, dst := refusedRebase(t, func(rel, data string) string {
		if strings.HasPrefix(rel, "d0/") || strings.HasPrefix(rel, "d6/") {
			return "changed " + data
		}
		return data
	}, nil)
	res, fs, _ := syncRun(t, "", dst, replica.Options{})
	if !hasFinding(fs, finding.Error, unpack.CheckDetached) || !hasFinding(fs, finding.Error, unpack.CheckUnfinished) || res.Written == 0 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
}

// TestRebaseAllRefusedLeavesStateAsItWas: a re-base whose one changed
// package is refused, and whose one removal is refused (the file changed
// at the Destination, kept), changes no file, and leaves state.json byte
// for byte as it was: nothing is half-applied, and the run still fails,
// naming the package.
func TestRebaseAllRefusedLeavesStateAsItWas(t *testing.T) {
	t.Parallel()
	const localData = "changed at the Destination"
	_, dst := refusedRebase(t, func(rel, data string) string {
		switch {
		case rel == "d3/f0003.bin":
			return "" // removed at the Source
		case strings.HasPrefix(rel, "d0/"):
			return "changed " + data
		}
		return data
	}, map[string]string{"d3/f0003.bin": localData})
	state := filepath.Join(dst, ".rsdump", "state.json")
	before, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	res, fs, _ := syncRun(t, "", dst, replica.Options{})
	if !hasFinding(fs, finding.Error, unpack.CheckDetached) || hasFinding(fs, finding.Error, unpack.CheckUnfinished) || res.Written+res.Deleted != 0 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "d3", "f0003.bin")); string(b) != localData || !strings.Contains(problems(fs), "not deleted") {
		t.Errorf("the file changed at the Destination: %q, findings:\n%s", b, problems(fs))
	}
	if after, _ := os.ReadFile(state); string(after) != string(before) {
		t.Errorf("state.json changed:\n%s\n----\n%s", before, after)
	}
}
