package verifytest

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/resourcesync"
)

// Want is a finding a case must produce: an error with this check about
// this ZIP entry (or manifest.xml, or "" for the whole package).
type Want struct {
	Check string
	Path  string
}

// Case is a broken package and what verify and unpack must say about it.
type Case struct {
	Name string
	Zip  []byte
	// Errors are exactly the error findings expected, as check and path.
	Errors []Want
	// Committed are the relative paths a non-atomic unpack writes: the
	// bitstreams that verified despite the damage elsewhere.
	Committed []string
	// MaxRatio, when set, is the expansion bound to verify with.
	MaxRatio float64
	// Extra are the bitstreams the case adds to BaseFiles.
	Extra []File
}

// Data is the content of the case's bitstream rel.
func (c Case) Data(rel string) string {
	for _, f := range append(c.Extra, BaseFiles...) {
		if f.Rel == rel {
			return f.Data
		}
	}
	return ""
}

// BaseFiles are the bitstreams of the package every case damages.
var BaseFiles = []File{
	{Rel: "a.txt", Data: strings.Repeat("alpha ", 40)},
	{Rel: "b.txt", Data: strings.Repeat("bravo ", 30)},
	{Rel: "dir/c.txt", Data: strings.Repeat("charlie ", 20)},
}

var allCommitted = []string{"a.txt", "b.txt", "dir/c.txt"}

// base returns the entries of the intact package, stored (not deflated)
// so that a byte flip lands on known data, plus the manifest entries.
func base(t testing.TB, files []File) ([]Entry, []resourcesync.URL) {
	var entries []Entry
	var urls []resourcesync.URL
	for _, f := range files {
		entries = append(entries, Entry{Name: "resources/" + f.Rel, Data: []byte(f.Data), Method: zip.Store})
		urls = append(urls, URLFor(f, "/resources/"))
	}
	return entries, urls
}

// build writes entries plus a manifest of urls, last, as pack does.
func build(t testing.TB, entries []Entry, urls []resourcesync.URL) []byte {
	m := Manifest(t, ResourceMD(), urls)
	return Zip(t, append(entries, Entry{Name: "manifest.xml", Data: m, Method: zip.Deflate}))
}

// Intact is the undamaged package of BaseFiles.
func Intact(t testing.TB) []byte {
	e, u := base(t, BaseFiles)
	return build(t, e, u)
}

// Corpus returns the broken packages. Every case is built from BaseFiles.
func Corpus(t testing.TB) []Case {
	t.Helper()
	intact := Intact(t)
	return []Case{
		flipBitstream(t, intact),
		flipCRC(t, intact),
		flipCentralName(t, intact),
		{Name: "truncated", Zip: intact[:len(intact)/2], Errors: []Want{{"zip", ""}}},
		manifestMissing(t),
		manifestMalformed(t),
		manifestLengthLong(t),
		manifestLengthShort(t),
		manifestHashLie(t),
		traversal(t),
		unsafeNames(t),
		duplicate(t),
		bombLyingSize(t),
		bombRatio(t),
		orphan(t),
		sharedHeader(t),
		localNameFlip(t, intact),
		overlap(t),
		fakeDescriptor(t),
		hiddenBetween(t),
		hiddenPrefix(t),
		hiddenBeforeDirectory(t),
		deflateTrailer(t),
		directoryWithData(t),
		storedLonger(t),
		encrypted(t, intact),
		zip64CountLie(t, intact),
		diskLie(t, intact),
	}
}

func flipBitstream(t testing.TB, intact []byte) Case {
	off := MustIndex(t, intact, []byte(BaseFiles[0].Data)) + 7
	return Case{Name: "bitstream-flip", Zip: Flip(intact, off),
		Errors:    []Want{{"crc", "resources/a.txt"}, {"hash", "resources/a.txt"}, {"hash", "resources/a.txt"}},
		Committed: []string{"b.txt", "dir/c.txt"}}
}

// centralHeader is the offset of the central directory header of name.
func centralHeader(t testing.TB, z []byte, name string) int {
	return MustIndex(t, z, []byte(name)) - 46
}

func flipCRC(t testing.TB, intact []byte) Case {
	off := centralHeader(t, intact, "resources/b.txt") + 16
	return Case{Name: "crc-flip", Zip: Flip(intact, off),
		Errors:    []Want{{"crc", "resources/b.txt"}},
		Committed: []string{"a.txt", "dir/c.txt"}}
}

func flipCentralName(t testing.TB, intact []byte) Case {
	off := MustIndex(t, intact, []byte("resources/dir/c.txt")) + len("resources/dir/c.tx")
	z := bytes.Clone(intact)
	z[off] = 'T' // a different but still safe name
	return Case{Name: "central-directory-flip", Zip: z,
		Errors:    []Want{{"missing", "resources/dir/c.txt"}, {"orphan", "resources/dir/c.txT"}},
		Committed: []string{"a.txt", "b.txt"}}
}

func manifestMissing(t testing.TB) Case {
	e, _ := base(t, BaseFiles)
	return Case{Name: "manifest-missing", Zip: Zip(t, e), Errors: []Want{{"manifest", "manifest.xml"}}}
}

func manifestMalformed(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	m := Manifest(t, ResourceMD(), u)
	m = m[:len(m)-40]
	z := Zip(t, append(e, Entry{Name: "manifest.xml", Data: m, Method: zip.Deflate}))
	return Case{Name: "manifest-malformed", Zip: z, Errors: []Want{{"manifest", "manifest.xml"}}}
}

func manifestLengthLong(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	u[0].MD.Length = resourcesync.Int64(*u[0].MD.Length + 5)
	return Case{Name: "manifest-length-long", Zip: build(t, e, u),
		Errors:    []Want{{"size", "resources/a.txt"}, {"length", "resources/a.txt"}},
		Committed: []string{"b.txt", "dir/c.txt"}}
}

func manifestLengthShort(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	u[1].MD.Length = resourcesync.Int64(*u[1].MD.Length - 2)
	return Case{Name: "manifest-length-short", Zip: build(t, e, u),
		Errors:    []Want{{"size", "resources/b.txt"}, {"length", "resources/b.txt"}},
		Committed: []string{"a.txt", "dir/c.txt"}}
}

func manifestHashLie(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	u[1].MD.Hash = HashAttr([]byte("something else"))
	return Case{Name: "manifest-hash-lie", Zip: build(t, e, u),
		Errors:    []Want{{"hash", "resources/b.txt"}, {"hash", "resources/b.txt"}},
		Committed: []string{"a.txt", "dir/c.txt"}}
}

// traversal lists a bitstream whose entry leaves the package root, the
// way resync names a sibling directory's files.
func traversal(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	evil := File{Rel: "evil.txt", Data: "escaped\n"}
	ue := URLFor(evil, "")
	ue.MD.Path = "../evil.txt"
	e = append(e, Entry{Name: "../evil.txt", Data: []byte(evil.Data), Method: zip.Store})
	return Case{Name: "traversal", Zip: build(t, e, append(u, ue)),
		Errors:    []Want{{"name", "../evil.txt"}, {"name", "../evil.txt"}, {"manifest", "../evil.txt"}},
		Committed: allCommitted}
}

func unsafeNames(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	for _, n := range []string{"/abs.txt", `..\win.txt`, "C:/drive.txt"} {
		e = append(e, Entry{Name: n, Data: []byte("x"), Method: zip.Store})
	}
	return Case{Name: "absolute-and-windows-names", Zip: build(t, e, u),
		Errors: []Want{{"name", "/abs.txt"}, {"orphan", "/abs.txt"}, {"name", `..\win.txt`}, {"orphan", `..\win.txt`},
			{"name", "C:/drive.txt"}, {"orphan", "C:/drive.txt"}},
		Committed: allCommitted}
}

func duplicate(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	e = append(e, Entry{Name: "resources/a.txt", Data: []byte("impostor"), Method: zip.Store})
	return Case{Name: "duplicate", Zip: build(t, e, u),
		Errors:    []Want{{"duplicate", "resources/a.txt"}, {"duplicate", "resources/a.txt"}},
		Committed: []string{"b.txt", "dir/c.txt"}}
}

// bombLyingSize is a deflated 2 MiB run of zeros whose central directory and
// manifest both claim 10 bytes: reading must stop at the 11th.
func bombLyingSize(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	zeros := make([]byte, 2<<20)
	small := File{Rel: "bomb.bin", Data: string(zeros[:10])}
	d := Deflated(zeros)
	e = append(e, Entry{Name: "resources/bomb.bin", Data: d, Method: zip.Deflate,
		Raw: &RawHeader{CRC32: CRC(zeros[:10]), CompressedSize64: uint64(len(d)), UncompressedSize64: 10}})
	return Case{Name: "zip-bomb-lying-size", Zip: build(t, e, append(u, URLFor(small, "/resources/"))),
		Errors:    []Want{{"length", "resources/bomb.bin"}},
		Committed: allCommitted}
}

// bombRatio is an honest 2 MiB run of zeros refused by a ratio bound of
// 10, without being inflated.
func bombRatio(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	zeros := make([]byte, 2<<20)
	f := File{Rel: "zeros.bin", Data: string(zeros)}
	e = append(e, Entry{Name: "resources/zeros.bin", Data: zeros, Method: zip.Deflate})
	return Case{Name: "zip-bomb-ratio", Zip: build(t, e, append(u, URLFor(f, "/resources/"))), MaxRatio: 10,
		Errors:    []Want{{"bomb", "resources/zeros.bin"}},
		Committed: allCommitted}
}

func orphan(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	e = append(e, Entry{Name: "resources/extra.txt", Data: []byte("not listed"), Method: zip.Store})
	return Case{Name: "orphan", Zip: build(t, e, u),
		Errors:    []Want{{"orphan", "resources/extra.txt"}},
		Committed: allCommitted}
}

// overlap points a second central directory record at the first entry's
// data, the building block of non-recursive zip bombs.
// sharedHeader points a second central record at a.txt's local header:
// the same data under two names.
func sharedHeader(t testing.TB) Case {
	extra := []File{{Rel: "a2.txt", Data: BaseFiles[0].Data}}
	e, u := base(t, append(extra, BaseFiles...))
	z := build(t, e, u)
	a := centralHeader(t, z, "resources/a.txt") + 42
	a2 := centralHeader(t, z, "resources/a2.txt") + 42
	binary.LittleEndian.PutUint32(z[a2:], binary.LittleEndian.Uint32(z[a:]))
	return Case{Name: "shared-local-header", Zip: z,
		Errors:    []Want{{"zip", ""}, {"zip", "resources/a2.txt"}}, // a2.txt's own entry is now hidden
		Committed: allCommitted, Extra: extra}
}

// localNameFlip changes b.txt's name in its local header only: a tool
// that streams local headers would unpack it under another name.
func localNameFlip(t testing.TB, intact []byte) Case {
	z := bytes.Clone(intact)
	off := bytes.Index(z, []byte("resources/b.txt")) + len("resources/b")
	z[off] = 'X'
	return Case{Name: "local-name-flip", Zip: z,
		Errors:    []Want{{"zip", "resources/b.txt"}},
		Committed: []string{"a.txt", "dir/c.txt"}}
}

// overlap is the non-recursive zip bomb's trick: q.txt's stored data is
// a complete entry for a2.txt, and a2.txt's central
// record points inside q.txt. Every entry reads correctly on its own.
func overlap(t testing.TB) Case {
	data := "overlapping\n"
	quoted := quotedEntry("resources/a2.txt", data)
	extra := []File{{Rel: "q.txt", Data: quoted}, {Rel: "a2.txt", Data: data}}
	e, u := base(t, append(extra, BaseFiles...))
	z := build(t, e, u)
	q := MustIndex(t, z[:len(z)/2], []byte(quoted)) // q.txt's data, before the directory
	a2 := centralHeader(t, z, "resources/a2.txt") + 42
	binary.LittleEndian.PutUint32(z[a2:], uint32(q))
	// q.txt holds a2.txt's descriptor, a2.txt's own entry is hidden now.
	return Case{Name: "overlap", Zip: z,
		Errors:    []Want{{"overlap", "resources/a2.txt"}, {"zip", ""}, {"zip", "resources/q.txt"}},
		Committed: append([]string{"a2.txt"}, allCommitted...), Extra: extra}
}

// quotedEntry is a stored entry as archive/zip writes it: local header
// (APPNOTE 4.3.7), data, data descriptor (4.3.9).
func quotedEntry(name, data string) string {
	crc := crc32.ChecksumIEEE([]byte(data))
	h := make([]byte, 30)
	binary.LittleEndian.PutUint32(h[0:], 0x04034b50)
	binary.LittleEndian.PutUint16(h[4:], 20)
	binary.LittleEndian.PutUint16(h[6:], 8) // sizes and CRC in the descriptor
	binary.LittleEndian.PutUint16(h[26:], uint16(len(name)))
	d := make([]byte, 16)
	binary.LittleEndian.PutUint32(d[0:], 0x08074b50)
	binary.LittleEndian.PutUint32(d[4:], crc)
	binary.LittleEndian.PutUint32(d[8:], uint32(len(data)))
	binary.LittleEndian.PutUint32(d[12:], uint32(len(data)))
	return string(h) + name + data + string(d)
}

// fakeDescriptor is a stored entry streamed with a data descriptor whose
// data holds a descriptor for its first bytes, then a whole local entry:
// bsdtar reading it from a pipe ends big.bin early and extracts evil.sh.
func fakeDescriptor(t testing.TB) Case {
	head := strings.Repeat("head ", 20)
	d := make([]byte, 16)
	binary.LittleEndian.PutUint32(d[0:], 0x08074b50)
	binary.LittleEndian.PutUint32(d[4:], crc32.ChecksumIEEE([]byte(head)))
	binary.LittleEndian.PutUint32(d[8:], uint32(len(head)))
	binary.LittleEndian.PutUint32(d[12:], uint32(len(head)))
	evil := storedEntry("resources/evil.sh", "#!/bin/sh\necho owned\n")
	extra := []File{{Rel: "big.bin", Data: head + string(d) + evil + strings.Repeat("tail ", 20)}}
	e, u := base(t, append(extra, BaseFiles...))
	return Case{Name: "fake-data-descriptor", Zip: build(t, e, u),
		Errors: []Want{{"zip", "resources/big.bin"}}, Committed: allCommitted, Extra: extra}
}

// storedEntry is a stored local entry whose header carries CRC and sizes.
func storedEntry(name, data string) string {
	h := make([]byte, 30)
	binary.LittleEndian.PutUint32(h[0:], 0x04034b50)
	binary.LittleEndian.PutUint16(h[4:], 20)
	binary.LittleEndian.PutUint32(h[14:], crc32.ChecksumIEEE([]byte(data)))
	binary.LittleEndian.PutUint32(h[18:], uint32(len(data)))
	binary.LittleEndian.PutUint32(h[22:], uint32(len(data)))
	binary.LittleEndian.PutUint16(h[26:], uint16(len(name)))
	return string(h) + name + data
}

// dropCentral removes name's central directory record, so that its local
// entry stays in the file but no directory lists it.
func dropCentral(t testing.TB, z []byte, name string) []byte {
	c := centralHeader(t, z, name)
	n := 46 + len(name) + int(binary.LittleEndian.Uint16(z[c+30:])) + int(binary.LittleEndian.Uint16(z[c+32:]))
	out := append(bytes.Clone(z[:c]), z[c+n:]...)
	end := len(out) - 22
	binary.LittleEndian.PutUint16(out[end+8:], binary.LittleEndian.Uint16(out[end+8:])-1)
	binary.LittleEndian.PutUint16(out[end+10:], binary.LittleEndian.Uint16(out[end+10:])-1)
	binary.LittleEndian.PutUint32(out[end+12:], binary.LittleEndian.Uint32(out[end+12:])-uint32(n))
	return out
}

func hidden() Entry {
	return Entry{Name: "resources/evil.sh", Data: []byte("#!/bin/sh\necho owned\n"), Method: zip.Store}
}

// hiddenBetween has a local entry between b.txt and c.txt that the
// central directory does not list.
func hiddenBetween(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	e = append(e[:2], append([]Entry{hidden()}, e[2:]...)...)
	return Case{Name: "hidden-entry-between", Zip: dropCentral(t, build(t, e, u), "resources/evil.sh"),
		Errors: []Want{{"zip", ""}}, Committed: allCommitted}
}

// hiddenPrefix puts a local entry before the archive; archive/zip skips
// it as it would a self-extractor's stub.
func hiddenPrefix(t testing.TB) Case {
	z := append([]byte(storedEntry("resources/evil.sh", "#!/bin/sh\necho owned\n")), Intact(t)...)
	return Case{Name: "hidden-entry-prefix", Zip: z, Errors: []Want{{"zip", ""}}, Committed: allCommitted}
}

// hiddenBeforeDirectory has an unlisted local entry after manifest.xml.
func hiddenBeforeDirectory(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	m := Manifest(t, ResourceMD(), u)
	z := Zip(t, append(e, Entry{Name: "manifest.xml", Data: m, Method: zip.Deflate}, hidden()))
	return Case{Name: "hidden-entry-before-directory", Zip: dropCentral(t, z, "resources/evil.sh"),
		Errors: []Want{{"zip", ""}}, Committed: allCommitted}
}

// deflateTrailer is a deflated entry whose compressed size covers a local
// entry after the end of its deflate stream.
func deflateTrailer(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	f := File{Rel: "d.txt", Data: strings.Repeat("delta ", 50)}
	d := append(Deflated([]byte(f.Data)), storedEntry("resources/evil.sh", "#!/bin/sh\n")...)
	e = append(e, Entry{Name: "resources/d.txt", Data: d, Method: zip.Deflate,
		Raw: &RawHeader{CRC32: CRC([]byte(f.Data)), CompressedSize64: uint64(len(d)), UncompressedSize64: uint64(len(f.Data))}})
	return Case{Name: "deflate-trailing-bytes", Zip: build(t, e, append(u, URLFor(f, "/resources/"))),
		Errors: []Want{{"zip", "resources/d.txt"}}, Committed: allCommitted}
}

// directoryWithData is a directory entry with content, which some
// extractors write as a file.
func directoryWithData(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	e = append(e, Entry{Name: "resources/d_", Data: []byte("#!/bin/sh\n"), Method: zip.Store})
	z := bytes.ReplaceAll(build(t, e, u), []byte("resources/d_"), []byte("resources/d/")) // archive/zip writes no data to a directory
	return Case{Name: "directory-with-data", Zip: z,
		Errors: []Want{{"zip", "resources/d/"}}, Committed: allCommitted}
}

// storedLonger is a stored entry whose data runs on past the size its
// headers declare: the surplus is a local entry a streaming reader meets.
func storedLonger(t testing.TB) Case {
	e, u := base(t, BaseFiles)
	f := File{Rel: "d.txt", Data: strings.Repeat("delta ", 50)}
	d := append([]byte(f.Data), storedEntry("resources/evil.sh", "#!/bin/sh\n")...)
	e = append(e, Entry{Name: "resources/d.txt", Data: d, Method: zip.Store,
		Raw: &RawHeader{CRC32: CRC([]byte(f.Data)), CompressedSize64: uint64(len(f.Data)), UncompressedSize64: uint64(len(f.Data))}})
	return Case{Name: "stored-data-longer", Zip: build(t, e, append(u, URLFor(f, "/resources/"))),
		Errors: []Want{{"zip", ""}}, Committed: append([]string{"d.txt"}, allCommitted...), Extra: []File{f}}
}

// encrypted sets b.txt's encryption flag in both headers: archive/zip
// reads on as if the data were plain, other readers want a password.
func encrypted(t testing.TB, intact []byte) Case {
	z := bytes.Clone(intact)
	c := centralHeader(t, z, "resources/b.txt")
	l := int(binary.LittleEndian.Uint32(z[c+42:]))
	z[c+8] |= 1
	z[l+6] |= 1
	return Case{Name: "encryption-flag", Zip: z,
		Errors: []Want{{"zip", "resources/b.txt"}}, Committed: []string{"a.txt", "dir/c.txt"}}
}

// zip64CountLie adds ZIP64 end records that count one entry more than the
// plain end record; archive/zip ignores them, 7-Zip and libarchive do not.
func zip64CountLie(t testing.TB, intact []byte) Case {
	end := len(intact) - 22
	n := uint64(binary.LittleEndian.Uint16(intact[end+10:]))
	size, off := binary.LittleEndian.Uint32(intact[end+12:]), binary.LittleEndian.Uint32(intact[end+16:])
	var r []byte
	r = binary.LittleEndian.AppendUint32(r, 0x06064b50)
	r = binary.LittleEndian.AppendUint64(r, 44)
	r = binary.LittleEndian.AppendUint16(r, 45)
	r = binary.LittleEndian.AppendUint16(r, 45)
	r = binary.LittleEndian.AppendUint64(r, 0) // both disks 0
	r = binary.LittleEndian.AppendUint64(r, n+1)
	r = binary.LittleEndian.AppendUint64(r, n+1)
	r = binary.LittleEndian.AppendUint64(r, uint64(size))
	r = binary.LittleEndian.AppendUint64(r, uint64(off))
	r = binary.LittleEndian.AppendUint32(r, 0x07064b50)
	r = binary.LittleEndian.AppendUint32(r, 0)
	r = binary.LittleEndian.AppendUint64(r, uint64(end))
	r = binary.LittleEndian.AppendUint32(r, 1)
	z := append(append(bytes.Clone(intact[:end]), r...), intact[end:]...)
	return Case{Name: "zip64-count-lie", Zip: z, Errors: []Want{{"zip", ""}}, Committed: allCommitted}
}

// diskLie claims the package spans two disks.
func diskLie(t testing.TB, intact []byte) Case {
	z := bytes.Clone(intact)
	binary.LittleEndian.PutUint16(z[len(z)-22+4:], 1)
	return Case{Name: "disk-count-lie", Zip: z, Errors: []Want{{"zip", ""}}, Committed: allCommitted}
}
