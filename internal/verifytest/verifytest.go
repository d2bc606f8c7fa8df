// Package verifytest builds ResourceSync packages for tests, good and
// broken: the corpus of damaged packages that verify and unpack must
// refuse, each with the findings expected, and Change Dumps, which pack
// does not write yet. Everything is built in memory from a few bytes of
// content, so the corpus needs no fixture files.
package verifytest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/resourcesync"
)

// BaseURL is the prefix of every bitstream URI built here.
const BaseURL = "http://127.0.0.1/rs/"

// Time is the lastmod of every bitstream and the at of every manifest.
var Time = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// Entry is one ZIP entry to write.
type Entry struct {
	Name   string
	Data   []byte
	Method uint16 // zip.Store or zip.Deflate
	// Raw, when set, is written as the entry's stored bytes with the
	// given header values, so that tests can make sizes and CRCs lie.
	Raw *RawHeader
}

// RawHeader gives the values written for a raw entry.
type RawHeader struct {
	CRC32              uint32
	CompressedSize64   uint64
	UncompressedSize64 uint64
}

// Zip writes entries, in order, with archive/zip.
func Zip(t testing.TB, entries []Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		if err := addEntry(zw, e); err != nil {
			t.Fatalf("zip entry %s: %v", e.Name, err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func addEntry(zw *zip.Writer, e Entry) error {
	fh := &zip.FileHeader{Name: e.Name, Method: e.Method, Modified: Time}
	if e.Raw != nil {
		fh.CRC32, fh.CompressedSize64, fh.UncompressedSize64 = e.Raw.CRC32, e.Raw.CompressedSize64, e.Raw.UncompressedSize64
		w, err := zw.CreateRaw(fh)
		if err != nil {
			return err
		}
		_, err = w.Write(e.Data)
		return err
	}
	w, err := zw.CreateHeader(fh)
	if err != nil {
		return err
	}
	_, err = w.Write(e.Data)
	return err
}

// Deflated compresses data as a raw deflate stream, for Raw entries.
func Deflated(data []byte) []byte {
	var buf bytes.Buffer
	fw, _ := flate.NewWriter(&buf, flate.BestCompression)
	fw.Write(data)
	fw.Close()
	return buf.Bytes()
}

// CRC returns the CRC-32 of data.
func CRC(data []byte) uint32 { return crc32.ChecksumIEEE(data) }

// File is a bitstream of a package: its path relative to the base URL and
// to /resources/ (or /changes/), and its content.
type File struct {
	Rel    string
	Data   string
	Change string // for Change Dump Manifests
	// Lastmod defaults to Time.
	Lastmod time.Time
	// Datetime, the time of a change in ResourceSync 1.1, is written
	// when set.
	Datetime time.Time
	// Loc overrides the URI derived from Rel.
	Loc string
}

// Loc is the bitstream URI of a relative path, percent-encoded per segment
// as pack writes it.
func Loc(rel string) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return BaseURL + strings.Join(segs, "/")
}

// HashAttr is the md5 and sha-256 hash attribute of data.
func HashAttr(data []byte) string {
	m := md5.Sum(data)
	s := sha256.Sum256(data)
	return "md5:" + hex.EncodeToString(m[:]) + " sha-256:" + hex.EncodeToString(s[:])
}

// SHA256 is the hex sha-256 of data.
func SHA256(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// URLFor is the manifest entry of a file stored at prefix+Rel in a package.
func URLFor(f File, prefix string) resourcesync.URL {
	lm := f.Lastmod
	if lm.IsZero() {
		lm = Time
	}
	loc := f.Loc
	if loc == "" {
		loc = Loc(f.Rel)
	}
	u := resourcesync.URL{Loc: loc, Lastmod: lm, MD: &resourcesync.MD{Change: f.Change, Datetime: f.Datetime}}
	if f.Change == resourcesync.ChangeDeleted {
		return u
	}
	u.MD.Hash = HashAttr([]byte(f.Data))
	u.MD.Length = resourcesync.Int64(int64(len(f.Data)))
	u.MD.Type = "text/plain"
	u.MD.Path = prefix + f.Rel
	return u
}

// Manifest encodes a manifest with header md and the given entries.
func Manifest(t testing.TB, md resourcesync.MD, urls []resourcesync.URL) []byte {
	t.Helper()
	return Encode(t, resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, urls)
}

// ResourceMD is the header of a Resource Dump Manifest.
func ResourceMD() resourcesync.MD {
	return resourcesync.MD{Capability: resourcesync.CapResourceDumpManifest, At: Time, Completed: Time}
}

// Package builds a Resource Dump package of files the way pack lays it
// out: deflated entries under resources/, manifest.xml last. It returns
// the ZIP and its manifest.
func Package(t testing.TB, files []File) (zipBytes, manifest []byte) {
	t.Helper()
	var entries []Entry
	var urls []resourcesync.URL
	for _, f := range files {
		entries = append(entries, Entry{Name: "resources/" + f.Rel, Data: []byte(f.Data), Method: zip.Deflate})
		urls = append(urls, URLFor(f, "/resources/"))
	}
	manifest = Manifest(t, ResourceMD(), urls)
	entries = append(entries, Entry{Name: "manifest.xml", Data: manifest, Method: zip.Deflate})
	return Zip(t, entries), manifest
}

// Flip returns a copy of b with the byte at off inverted.
func Flip(b []byte, off int) []byte {
	c := bytes.Clone(b)
	c[off] ^= 0xff
	return c
}

// MustIndex is the offset of the last occurrence of sub in b (the central
// directory is at the end, after any local copy of the same bytes).
func MustIndex(t testing.TB, b, sub []byte) int {
	t.Helper()
	i := bytes.LastIndex(b, sub)
	if i < 0 {
		t.Fatalf("%q not found", sub)
	}
	return i
}

// ReadAll reads r or fails the test.
func ReadAll(t testing.TB, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
