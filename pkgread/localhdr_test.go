package pkgread

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"go/build"
	"hash/crc32"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/ziprange"
)

// TestHeaderOffset checks the local header offsets pkgread takes from the
// central directory: each leads to the entry's data, as archive/zip reads
// it, under the entry's name, whatever shifts or widens the offsets.
func TestHeaderOffset(t *testing.T) {
	t.Parallel()
	plain := testZip(t, 3, "")
	cases := map[string][]byte{
		"plain":    plain,
		"comment":  testZip(t, 3, "a comment with PK\x05\x06 inside"),
		"prefixed": append(bytes.Repeat([]byte("#!/bin/sh\n"), 100), plain...),
		"zip64":    testZip(t, 0x10000+5, ""), // archive/zip writes ZIP64 end records past 65,535 entries
		"zip64 offsets": zip64Offsets(t, []rawFile{ // offsets and sizes saturated, in ZIP64 fields
			{name: "f0", data: "data 0"}, {name: "f1", data: "data 1"}}),
	}
	for name, z := range cases {
		t.Run(name, func(t *testing.T) {
			p, _ := layoutOf(t, z)
			for _, f := range p.zr.File {
				off, err := p.headerOffset(f)
				if err != nil {
					t.Fatal(err)
				}
				h := z[off:]
				n, e := int64(binary.LittleEndian.Uint16(h[26:])), int64(binary.LittleEndian.Uint16(h[28:]))
				if data, _ := f.DataOffset(); binary.LittleEndian.Uint32(h) != ziprange.SigLocal || off+ziprange.LocalLen+n+e != data || string(h[ziprange.LocalLen:ziprange.LocalLen+n]) != f.Name {
					t.Fatalf("%s: header at %d names %q and leads to %d, data at %d", f.Name, off, h[ziprange.LocalLen:ziprange.LocalLen+n], off+ziprange.LocalLen+n+e, data)
				}
				if _, _, err := p.checkLocal(f); err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
			}
		})
	}
}

// TestDecoyHeaderRefused: archives in which a naive second parser of the
// central directory finds a decoy local header that names the entry and
// agrees with its central record, while archive/zip reads the data behind
// a header that names another file (the one a streaming reader unpacks).
// pkgread must check the header archive/zip reads, and refuse it.
func TestDecoyHeaderRefused(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		z     []byte
		naive func(z []byte, f *zip.File) int64 // where the naive parser looks
	}{
		// The ZIP64 field gives an offset the 32-bit field does not
		// saturate: archive/zip (APPNOTE 4.5.3) ignores it.
		"ZIP64 offset not saturated": {decoyZip64(t), func(z []byte, f *zip.File) int64 {
			return int64(binary.LittleEndian.Uint64(f.Extra[4:]))
		}},
		// A prefix shifts every offset; the naive parser does not add it.
		"prefix not added": {decoyPrefix(t), func(z []byte, f *zip.File) int64 {
			return int64(binary.LittleEndian.Uint32(z[centralOf(t, z, f.Name)+42:]))
		}},
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := layoutOf(t, c.z)
			f := p.zr.File[len(p.zr.File)-1]
			if err := naiveCheck(c.z, c.naive(c.z, f), f); err != nil {
				t.Fatalf("the decoy does not pass a naive check, the test shows nothing: %v", err)
			}
			_, _, err := p.checkLocal(f)
			if err == nil || !strings.Contains(err.Error(), `names the entry "g`) {
				t.Fatalf("%s: error %v, want one naming the header archive/zip reads (g...)", f.Name, err)
			}
		})
	}
}

// TestHeaderMustLeadToData: a parse of the central directory steered to a
// decoy (here: told so) finds a header that names the entry and agrees
// with it, but does not lead to the data archive/zip reads: refused.
func TestHeaderMustLeadToData(t *testing.T) {
	t.Parallel()
	z := decoyZip64(t)
	p, _ := layoutOf(t, z)
	f := p.zr.File[1]
	decoy := int64(binary.LittleEndian.Uint64(f.Extra[4:]))
	if err := naiveCheck(z, decoy, f); err != nil {
		t.Fatal(err)
	}
	p.place.hdrs[1] = decoy
	_, _, err := p.checkLocal(f)
	if err == nil || !strings.Contains(err.Error(), "archive/zip reads the entry's data from offset") {
		t.Fatalf("error %v, want one saying the header does not lead to archive/zip's data", err)
	}
}

// TestHeaderInsidePreviousEntry: b's local header starts inside a's data,
// and b's data after it, so no data is shared; a streaming reader reads
// a to its end, which is inside b's extra field, and meets there a local
// entry no central record lists. bsdtar reading from a pipe unpacks it.
func TestHeaderInsidePreviousEntry(t *testing.T) {
	t.Parallel()
	z := straddled(t)
	if bsdtar, err := exec.LookPath("bsdtar"); err == nil {
		cmd := exec.Command(bsdtar, "-tf", "-")
		cmd.Stdin = bytes.NewReader(z)
		out, _ := cmd.Output()
		if !strings.Contains(string(out), "evil.sh") {
			t.Errorf("bsdtar from a pipe lists %q, not the hidden evil.sh: the case shows nothing", out)
		}
	} else {
		t.Log("bsdtar not installed (apt-get install libarchive-tools): the streaming reader's view is not shown")
	}
	p, fs := layoutOf(t, z)
	for _, f := range p.zr.File {
		if _, _, err := p.checkLocal(f); err != nil {
			t.Fatalf("%s: %v (each entry must pass on its own)", f.Name, err)
		}
	}
	p.CheckLayout()
	var got []string
	for _, f := range *fs {
		got = append(got, f.Code+" "+f.Path)
	}
	if want := []string{"overlap b"}; !slices.Equal(got, want) {
		t.Fatalf("findings %q, want %q:\n%v", got, want, *fs)
	}
}

// TestNoReflection: pkgread takes nothing from archive/zip but its
// exported API.
func TestNoReflection(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"reflect", "unsafe"} {
		if slices.Contains(pkg.Imports, bad) {
			t.Errorf("pkgread imports %s", bad)
		}
	}
}

// layoutOf is a package of z without a manifest, its local headers placed:
// for the layout checks, with the findings they report.
func layoutOf(t *testing.T, z []byte) (*Package, *[]finding.Finding) {
	t.Helper()
	p, fs, err := newLayout(z)
	if err != nil {
		t.Fatal(err)
	}
	if p.place.err != nil || p.place.endErr != nil {
		t.Fatalf("placing the local headers: %v %v", p.place.endErr, p.place.err)
	}
	return p, fs
}

// newLayout is layoutOf for any bytes: an error when archive/zip cannot
// read them.
func newLayout(z []byte) (*Package, *[]finding.Finding, error) {
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, nil, err
	}
	fs := new([]finding.Finding)
	rep := finding.NewReporter(func(e finding.Event) {
		if f, ok := e.(finding.Finding); ok {
			*fs = append(*fs, f)
		}
	})
	p := &Package{Source: "test.zip", zr: zr, ra: bytes.NewReader(z), size: int64(len(z)), rep: rep,
		index: map[*zip.File]int{}, tiles: map[*zip.File]tile{}, visited: map[*zip.File]bool{}}
	p.indexEntries()
	p.placeEntries()
	return p, fs, nil
}

// naiveCheck is what a second parser checks at off: a local header that
// names f and gives its method, CRC-32 and sizes.
func naiveCheck(z []byte, off int64, f *zip.File) error {
	h := z[off:]
	n := int(binary.LittleEndian.Uint16(h[26:]))
	switch {
	case binary.LittleEndian.Uint32(h) != ziprange.SigLocal:
		return fmt.Errorf("no local header at %d", off)
	case string(h[30:30+n]) != f.Name:
		return fmt.Errorf("header at %d names %q", off, h[30:30+n])
	case binary.LittleEndian.Uint16(h[8:]) != f.Method || binary.LittleEndian.Uint32(h[14:]) != f.CRC32 ||
		uint64(binary.LittleEndian.Uint32(h[18:])) != f.CompressedSize64:
		return fmt.Errorf("header at %d disagrees with the central record", off)
	}
	return nil
}

// rawFile is a stored entry written as given: extra in both headers.
type rawFile struct {
	name, data string
	extra      func(at int) []byte // the extra field, given where the local header is
}

// rawZip writes stored entries with CRC-32 and sizes in their local
// headers, no data descriptor.
func rawZip(t testing.TB, prefix string, files []rawFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString(prefix)
	zw := zip.NewWriter(&buf) // offsets from the archive's start, after the prefix
	for _, f := range files {
		zw.Flush()
		fh := &zip.FileHeader{Name: f.name, Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte(f.data)),
			CompressedSize64: uint64(len(f.data)), UncompressedSize64: uint64(len(f.data))}
		if f.extra != nil {
			fh.Extra = f.extra(buf.Len())
		}
		w, err := zw.CreateRaw(fh)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.data))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zip64Field is a ZIP64 extra field holding vals.
func zip64Field(vals ...uint64) []byte {
	b := binary.LittleEndian.AppendUint16(nil, 1)
	b = binary.LittleEndian.AppendUint16(b, uint16(8*len(vals)))
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// zip64Offsets writes files with ZIP64 fields giving their sizes and
// local header offsets, and saturates those in the central records.
func zip64Offsets(t testing.TB, files []rawFile) []byte {
	for i := range files {
		n := uint64(len(files[i].data))
		files[i].extra = func(at int) []byte { return zip64Field(n, n, uint64(at)) }
	}
	z := rawZip(t, "", files)
	for _, f := range files {
		c := centralOf(t, z, f.name)
		for _, at := range []int{20, 24, 42} {
			binary.LittleEndian.PutUint32(z[c+at:], 0xffffffff)
		}
	}
	return z
}

// decoyEntry is a stored local entry for name holding data, as a naive
// parser would accept it.
func decoyEntry(name, data string) string {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte(data)),
		CompressedSize64: uint64(len(data)), UncompressedSize64: uint64(len(data))})
	w.Write([]byte(data))
	zw.Flush()
	return b.String()
}

// decoyZip64 holds f0, whose data is a decoy entry for f1, and f1, whose
// ZIP64 field points to the decoy while its 32-bit offset, not
// saturated, points to its own header, which names g1.
func decoyZip64(t testing.TB) []byte {
	decoy := decoyEntry("f1", "good\n")
	z := rawZip(t, "", []rawFile{
		{name: "f0", data: decoy},
		{name: "f1", data: "good\n", extra: func(int) []byte { return zip64Field(30 + 2) }}, // f0's data
	})
	return renameLocal(t, z, "f1", "g1")
}

// decoyPrefix is f0 behind a prefix that begins with a decoy entry for
// f0, where its offset, without the prefix, points; its own header names
// g0.
func decoyPrefix(t testing.TB) []byte {
	z := rawZip(t, decoyEntry("f0", "good\n")+"padding", []rawFile{{name: "f0", data: "good\n"}})
	return renameLocal(t, z, "f0", "g0")
}

// renameLocal renames the last local header of name.
func renameLocal(t testing.TB, z []byte, name, to string) []byte {
	c := centralOf(t, z, name)
	i := bytes.LastIndex(z[:c], []byte(name))
	if i < 0 {
		t.Fatalf("no local header of %s", name)
	}
	copy(z[i:], to)
	return z
}

// centralOf is the offset of name's central record.
func centralOf(t testing.TB, z []byte, name string) int {
	i := bytes.Index(z, []byte("PK\x01\x02"))
	for i >= 0 {
		n := int(binary.LittleEndian.Uint16(z[i+28:]))
		if string(z[i+46:i+46+n]) == name {
			return i
		}
		j := bytes.Index(z[i+4:], []byte("PK\x01\x02"))
		if j < 0 {
			break
		}
		i += 4 + j
	}
	t.Fatalf("no central record of %s", name)
	return 0
}

// straddled is a, stored, whose data runs k bytes into b's local header:
// to the start of b's extra field's content, which is a whole local
// entry, evil.sh; then b's data.
func straddled(t testing.TB) []byte {
	evil := decoyEntry("evil.sh", "#!/bin/sh\necho owned\n")
	bExtra := binary.LittleEndian.AppendUint16(nil, 0xcafe)
	bExtra = binary.LittleEndian.AppendUint16(bExtra, uint16(len(evil)))
	bExtra = append(bExtra, evil...)
	bData := "bravo\n"
	bHead := localHeader("b", bExtra, bData)
	k := len(bHead) - len(evil) // a's data ends where evil.sh begins
	aData := "alpha\n" + string(bHead[:k])
	aHead := localHeader("a", nil, aData)
	var z []byte
	z = append(z, aHead...)
	z = append(z, "alpha\n"...)
	bAt := len(z)
	z = append(z, bHead...)
	z = append(z, bData...)
	dir := len(z)
	z = append(z, centralRecord("a", aData, 0)...)
	z = append(z, centralRecord("b", bData, bAt)...)
	end := make([]byte, 22)
	binary.LittleEndian.PutUint32(end, ziprange.SigEnd)
	binary.LittleEndian.PutUint16(end[8:], 2)
	binary.LittleEndian.PutUint16(end[10:], 2)
	binary.LittleEndian.PutUint32(end[12:], uint32(len(z)-dir))
	binary.LittleEndian.PutUint32(end[16:], uint32(dir))
	return append(z, end...)
}

// localHeader is a stored entry's local header, name and extra field.
func localHeader(name string, extra []byte, data string) []byte {
	h := make([]byte, 30)
	binary.LittleEndian.PutUint32(h, ziprange.SigLocal)
	binary.LittleEndian.PutUint16(h[4:], 20)
	binary.LittleEndian.PutUint32(h[14:], crc32.ChecksumIEEE([]byte(data)))
	binary.LittleEndian.PutUint32(h[18:], uint32(len(data)))
	binary.LittleEndian.PutUint32(h[22:], uint32(len(data)))
	binary.LittleEndian.PutUint16(h[26:], uint16(len(name)))
	binary.LittleEndian.PutUint16(h[28:], uint16(len(extra)))
	return append(append(h, name...), extra...)
}

// centralRecord is a stored entry's central record, without extra field.
func centralRecord(name, data string, at int) []byte {
	c := make([]byte, 46)
	binary.LittleEndian.PutUint32(c, ziprange.SigCentral)
	binary.LittleEndian.PutUint16(c[4:], 20)
	binary.LittleEndian.PutUint16(c[6:], 20)
	binary.LittleEndian.PutUint32(c[16:], crc32.ChecksumIEEE([]byte(data)))
	binary.LittleEndian.PutUint32(c[20:], uint32(len(data)))
	binary.LittleEndian.PutUint32(c[24:], uint32(len(data)))
	binary.LittleEndian.PutUint16(c[28:], uint16(len(name)))
	binary.LittleEndian.PutUint32(c[42:], uint32(at))
	return append(c, name...)
}

func testZip(t testing.TB, n int, comment string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range n {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("f%d", i), Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "data %d", i)
	}
	if comment != "" {
		zw.SetComment(comment)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
