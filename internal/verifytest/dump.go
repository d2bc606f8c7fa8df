package verifytest

import (
	"archive/zip"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rsdump/rsdump/resourcesync"
)

// ResourceDump writes each package into dir as resourcedump-0000N.zip and
// a resourcedump.xml listing them with their length and sha-256, and
// returns the path of resourcedump.xml.
func ResourceDump(t testing.TB, dir string, zips ...[]byte) string {
	t.Helper()
	var urls []resourcesync.URL
	for i, z := range zips {
		name := fmt.Sprintf("resourcedump-%05d.zip", i+1)
		write(t, filepath.Join(dir, name), z)
		urls = append(urls, resourcesync.URL{Loc: BaseURL + "dumps/" + name,
			MD: &resourcesync.MD{Type: "application/zip", Length: resourcesync.Int64(int64(len(z))), Hash: "sha-256:" + SHA256(z)}})
	}
	md := resourcesync.MD{Capability: resourcesync.CapResourceDump, At: Time, Completed: Time}
	doc := filepath.Join(dir, "resourcedump.xml")
	write(t, doc, Encode(t, resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, urls))
	return doc
}

// TailSwap builds two packages of the same length that differ only in
// their tail: the same stored bitstreams resources/a.txt ("good!") and
// resources/b.txt ("EVIL!"), but evil's manifest gives a.txt's URI the
// path of b.txt and the other way round. A reader that interprets evil's
// tail and hashes good's bytes would restore "EVIL!" as a.txt under good's
// package hash.
func TailSwap(t testing.TB) (good, evil []byte) {
	t.Helper()
	a, b := File{Rel: "a.txt", Data: "good!"}, File{Rel: "b.txt", Data: "EVIL!"}
	build := func(urls ...resourcesync.URL) []byte {
		m := Manifest(t, ResourceMD(), urls)
		return Zip(t, []Entry{
			{Name: "resources/a.txt", Data: []byte(a.Data), Method: zip.Store},
			{Name: "resources/b.txt", Data: []byte(b.Data), Method: zip.Store},
			{Name: "manifest.xml", Data: m, Method: zip.Store},
		})
	}
	good = build(URLFor(a, "/resources/"), URLFor(b, "/resources/"))
	evilA, evilB := b, a
	evilA.Loc, evilB.Loc = Loc("a.txt"), Loc("b.txt")
	evil = build(URLFor(evilA, "/resources/"), URLFor(evilB, "/resources/"))
	if len(good) != len(evil) {
		t.Fatalf("TailSwap: packages of %d and %d bytes", len(good), len(evil))
	}
	return good, evil
}
