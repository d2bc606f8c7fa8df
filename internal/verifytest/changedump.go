package verifytest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsdump/rsdump/resourcesync"
)

// ChangePackage is one package of a Change Dump: the interval it covers
// and its changes, in order. Each File needs Change and Lastmod.
type ChangePackage struct {
	From, Until time.Time
	Changes     []File
}

// ChangeDumpName is the document ChangeDump writes.
const ChangeDumpName = "changedump.xml"

// ChangeDump writes a Change Dump into dir, which pack cannot do yet:
// changedump-0000N.zip with a Change Dump Manifest (bitstreams under
// /changes/N/, N the entry number, so that one resource can change twice in
// a package), a detached copy of each manifest, and changedump.xml. It
// returns the path of changedump.xml.
func ChangeDump(t testing.TB, dir string, pkgs []ChangePackage) string {
	t.Helper()
	var urls []resourcesync.URL
	for i, p := range pkgs {
		name := fmt.Sprintf("changedump-%05d", i+1)
		z, m := ChangeZip(t, p)
		write(t, filepath.Join(dir, name+".zip"), z)
		write(t, filepath.Join(dir, name+".manifest.xml"), m)
		urls = append(urls, resourcesync.URL{
			Loc: BaseURL + "dumps/" + name + ".zip",
			MD: &resourcesync.MD{Type: "application/zip", Length: resourcesync.Int64(int64(len(z))), Hash: "sha-256:" + SHA256(z),
				From: p.From, Until: p.Until},
			Links: []resourcesync.Link{{Rel: "contents", Href: BaseURL + "dumps/" + name + ".manifest.xml", Type: "application/xml"}},
		})
	}
	md := resourcesync.MD{Capability: resourcesync.CapChangeDump, From: pkgs[0].From, Until: pkgs[len(pkgs)-1].Until}
	doc := filepath.Join(dir, ChangeDumpName)
	write(t, doc, Encode(t, resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, urls))
	return doc
}

// ChangeZip builds one Change Dump package and returns it with its
// manifest.
func ChangeZip(t testing.TB, p ChangePackage) ([]byte, []byte) {
	t.Helper()
	var entries []Entry
	var urls []resourcesync.URL
	for i, f := range p.Changes {
		prefix := fmt.Sprintf("/changes/%d/", i+1)
		u := URLFor(f, prefix)
		urls = append(urls, u)
		if f.Change != resourcesync.ChangeDeleted {
			entries = append(entries, Entry{Name: u.MD.Path[1:], Data: []byte(f.Data), Method: zip.Deflate})
		}
	}
	md := resourcesync.MD{Capability: resourcesync.CapChangeDumpManifest, From: p.From, Until: p.Until}
	m := Manifest(t, md, urls)
	return Zip(t, append(entries, Entry{Name: "manifest.xml", Data: m, Method: zip.Deflate})), m
}

// Encode writes a document with header h and entries urls.
func Encode(t testing.TB, h resourcesync.Header, urls []resourcesync.URL) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := resourcesync.EncodeAll(&buf, h, urls); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func write(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ResyncPackage builds a package the way resync writes one: manifest.xml
// first, every entry deflated, paths relative (no leading slash), no at.
// files' Rel values are used as entry names and paths as they are, so a
// test can reproduce resync's "../sibling/x" names.
func ResyncPackage(t testing.TB, files []File) []byte {
	t.Helper()
	var entries []Entry
	var urls []resourcesync.URL
	for _, f := range files {
		u := URLFor(f, "")
		urls = append(urls, u)
		entries = append(entries, Entry{Name: f.Rel, Data: []byte(f.Data), Method: zip.Deflate})
	}
	m := Manifest(t, resourcesync.MD{Capability: resourcesync.CapResourceDumpManifest}, urls)
	return Zip(t, append([]Entry{{Name: "manifest.xml", Data: m, Method: zip.Deflate}}, entries...))
}

// WriteDoc writes a document with header h and entries urls at path.
func WriteDoc(t testing.TB, path string, h resourcesync.Header, urls []resourcesync.URL) {
	t.Helper()
	write(t, path, Encode(t, h, urls))
}

// ReadDoc reads the header and entries of the document at path.
func ReadDoc(t testing.TB, path string) (resourcesync.Header, []resourcesync.URL) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := resourcesync.NewDecoder(f)
	if err != nil {
		t.Fatal(err)
	}
	var urls []resourcesync.URL
	if err := d.Each(func(u resourcesync.URL) error { urls = append(urls, u); return nil }); err != nil {
		t.Fatal(err)
	}
	return d.Header(), urls
}
