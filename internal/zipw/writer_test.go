package zipw

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/rsdump/rsdump/internal/racetest"
	"github.com/rsdump/rsdump/internal/ziptest"
)

// openZip reads an archive back with archive/zip.
func openZip(t *testing.T, b []byte) *zip.Reader {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("archive/zip: %v", err)
	}
	return zr
}

// checkTools writes the archive to a file and has unzip, bsdtar (from the
// file and streaming), 7-Zip and Python test it; a missing tool is skipped
// with a log line.
func checkTools(t *testing.T, b []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a.zip")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ziptest.CheckTools(t, path)
}

// TestWriteRawBytes writes one entry small enough for the buffer and one
// larger than it, which goes straight to the underlying writer after the
// buffered local header, and reads both back.
func TestWriteRawBytes(t *testing.T) {
	t.Parallel()
	small := []byte("small, through the buffer")
	large := make([]byte, 3<<20)
	for i := range large {
		large[i] = byte(i * 7 >> 3)
	}
	var out bytes.Buffer
	w := NewWriter(&out, 1)
	if err := w.WriteRawBytes(Header{Name: "small", Modified: mtime, Mode: 0o644}, crc32.ChecksumIEEE(small), int64(len(small)), small); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRawBytes(Header{Name: "dir/large", Modified: mtime, Mode: 0o600}, crc32.ChecksumIEEE(large), int64(len(large)), large); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRawBytes(Header{Name: "after", Modified: mtime}, crc32.ChecksumIEEE(small), int64(len(small)), small); err != nil {
		t.Fatal(err)
	}
	if w.Entries() != 3 {
		t.Errorf("Entries %d, want 3", w.Entries())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Offset() != int64(out.Len()) {
		t.Errorf("Offset %d, wrote %d", w.Offset(), out.Len())
	}
	zr := openZip(t, out.Bytes())
	want := []struct {
		name string
		data []byte
	}{{"small", small}, {"dir/large", large}, {"after", small}}
	if len(zr.File) != len(want) {
		t.Fatalf("%d entries, want %d", len(zr.File), len(want))
	}
	for i, f := range zr.File {
		if f.Name != want[i].name || !bytes.Equal(readAll(t, f), want[i].data) {
			t.Errorf("entry %d: %s, want %s with its content", i, f.Name, want[i].name)
		}
	}
	checkTools(t, out.Bytes())
}

// TestEntryWriterCounters checks CRC32 and CompressedSize against what
// archive/zip reads back, for a deflated and a stored entry.
func TestEntryWriterCounters(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("counted "), 4096)
	var out bytes.Buffer
	w := NewWriter(&out, 6)
	type got struct {
		crc   uint32
		csize int64
	}
	var counters []got
	for _, method := range []uint16{Deflate, Store} {
		h := Header{Name: fmt.Sprint("m", method), Modified: mtime, Method: method}
		var ew *EntryWriter
		var err error
		if method == Store {
			ew, err = w.CreateStored(h, crc32.ChecksumIEEE(data), int64(len(data)))
		} else {
			ew, err = w.Create(h, int64(len(data)))
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ew.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := ew.Close(); err != nil {
			t.Fatal(err)
		}
		counters = append(counters, got{ew.CRC32(), ew.CompressedSize()})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for i, f := range openZip(t, out.Bytes()).File {
		if counters[i].crc != f.CRC32 || uint64(counters[i].csize) != f.CompressedSize64 {
			t.Errorf("%s: CRC32 %08x CompressedSize %d; archive has %08x %d", f.Name, counters[i].crc, counters[i].csize, f.CRC32, f.CompressedSize64)
		}
		readAll(t, f)
	}
	if counters[0].csize >= int64(len(data)) || counters[1].csize != int64(len(data)) {
		t.Errorf("compressed sizes %d (deflated) and %d (stored) of %d bytes", counters[0].csize, counters[1].csize, len(data))
	}
}

// TestStreamedDescriptor checks the data descriptor of a streamed entry on
// both sides of the size hint from which its local header carries ZIP64
// fields: 64-bit sizes in the descriptor exactly when the local header has
// them (APPNOTE 4.3.9.2), which a streaming reader (bsdtar from a pipe)
// depends on to find the next entry.
func TestStreamedDescriptor(t *testing.T) {
	t.Parallel()
	threshold := int64(u32max - u32max/64)
	data := bytes.Repeat([]byte("streamed "), 3000)
	for _, hint := range []int64{0, threshold - 1, threshold, 5 << 30} {
		t.Run(fmt.Sprint(hint), func(t *testing.T) {
			zip64 := hint >= threshold
			var out bytes.Buffer
			w := NewWriter(&out, 1)
			ew, err := w.Create(Header{Name: "s", Modified: mtime, Method: Deflate}, hint)
			if err != nil {
				t.Fatal(err)
			}
			ew.Write(data)
			if err := ew.Close(); err != nil {
				t.Fatal(err)
			}
			next := []byte("next entry")
			writeRawClose(t, w, "next", next)
			b := out.Bytes()
			zr := openZip(t, b)
			f := zr.File[0]
			if !bytes.Equal(readAll(t, f), data) || string(readAll(t, zr.File[1])) != string(next) {
				t.Fatal("content differs")
			}
			if f.Flags&flagDescriptor == 0 {
				t.Fatalf("flags %x: no descriptor", f.Flags)
			}
			if (f.ReaderVersion == version45) != zip64 {
				t.Errorf("central directory: version %d, local header ZIP64 %v", f.ReaderVersion, zip64)
			}
			// The local header: version 45 and a ZIP64 field with both sizes
			// exactly when zip64.
			le := binary.LittleEndian
			if v := le.Uint16(b[4:]); (v == version45) != zip64 {
				t.Errorf("local header version %d, zip64 %v", v, zip64)
			}
			if c, u := le.Uint32(b[18:]), le.Uint32(b[22:]); zip64 && (c != u32max || u != u32max) || !zip64 && (c != 0 || u != 0) {
				t.Errorf("local header sizes %x %x, zip64 %v", c, u, zip64)
			}
			// The descriptor ends where the next local header begins.
			dataOff, err := f.DataOffset()
			if err != nil {
				t.Fatal(err)
			}
			end := dataOff + int64(f.CompressedSize64)
			d := b[end:]
			if le.Uint32(d) != sigDescriptor || le.Uint32(d[4:]) != f.CRC32 {
				t.Fatalf("no descriptor at %d: % x", end, d[:16])
			}
			var csize, usize uint64
			n := 16
			if zip64 {
				csize, usize, n = le.Uint64(d[8:]), le.Uint64(d[16:]), 24
			} else {
				csize, usize = uint64(le.Uint32(d[8:])), uint64(le.Uint32(d[12:]))
			}
			if csize != f.CompressedSize64 || usize != uint64(len(data)) {
				t.Errorf("descriptor sizes %d %d, want %d %d", csize, usize, f.CompressedSize64, len(data))
			}
			if le.Uint32(d[n:]) != sigLocal {
				t.Errorf("descriptor of %d bytes not followed by the next local header", n)
			}
			checkTools(t, b)
		})
	}
}

// shifted is an archive whose first base bytes are zeros that were never
// written, so a test can place a central directory past 4 GiB.
type shifted struct {
	base int64
	b    []byte
}

func (s *shifted) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) && off+int64(n) < s.base {
		p[n] = 0
		n++
	}
	if n < len(p) {
		o := off + int64(n) - s.base
		if o >= int64(len(s.b)) {
			return n, io.EOF
		}
		n += copy(p[n:], s.b[o:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// zip64Fields parses the ZIP64 extended-information field of extra, or
// returns ok false when there is none.
func zip64Fields(extra []byte) (fields []uint64, ok bool) {
	for len(extra) >= 4 {
		id, n := binary.LittleEndian.Uint16(extra), int(binary.LittleEndian.Uint16(extra[2:]))
		body := extra[4 : 4+n]
		extra = extra[4+n:]
		if id != extraZip64 {
			continue
		}
		for ; len(body) >= 8; body = body[8:] {
			fields = append(fields, binary.LittleEndian.Uint64(body))
		}
		return fields, true
	}
	return nil, false
}

// TestZip64CentralBoundaries writes central directory records of entries
// whose sizes and offset lie on either side of 2³²-1, the 32-bit field's
// "see the ZIP64 field" value: the ZIP64 field must hold exactly the
// fields whose slot is 0xFFFFFFFF (a value of 2³²-1 itself included),
// in APPNOTE's order, and nothing else (7-Zip rejects a full field where
// a slot did not overflow). The entries are recorded without their data,
// so archive/zip reads the directory only.
func TestZip64CentralBoundaries(t *testing.T) {
	t.Parallel()
	vals := []int64{u32max - 1, u32max, u32max + 1}
	small := int64(100)
	type c struct{ csize, usize, offset int64 }
	var cases []c
	for _, v := range vals {
		// Deflate can make incompressible data larger: csize alone may overflow.
		cases = append(cases, c{small, v, 0}, c{v, small, 0}, c{v, v, 0}, c{small, small, v}, c{v, v + 10, v})
	}
	cases = append(cases, c{small, small, 0})
	var out bytes.Buffer
	w := NewWriter(&out, 1)
	w.off = 6 << 30 // the directory starts past 4 GiB
	for i, cs := range cases {
		w.dir = append(w.dir, &entry{Header: Header{Name: fmt.Sprint("e", i), Modified: mtime}, crc: uint32(i), csize: cs.csize, usize: cs.usize, offset: cs.offset})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s := &shifted{base: 6 << 30, b: out.Bytes()}
	zr, err := zip.NewReader(s, s.base+int64(len(s.b)))
	if err != nil {
		t.Fatalf("archive/zip: %v", err)
	}
	if len(zr.File) != len(cases) {
		t.Fatalf("%d entries, want %d", len(zr.File), len(cases))
	}
	for i, f := range zr.File {
		cs := cases[i]
		if f.CompressedSize64 != uint64(cs.csize) || f.UncompressedSize64 != uint64(cs.usize) || f.CRC32 != uint32(i) {
			t.Errorf("%s: sizes %d %d CRC %d, want %d %d %d", f.Name, f.CompressedSize64, f.UncompressedSize64, f.CRC32, cs.csize, cs.usize, i)
		}
		var want []uint64
		for _, v := range []int64{cs.usize, cs.csize, cs.offset} {
			if v >= u32max {
				want = append(want, uint64(v))
			}
		}
		got, ok := zip64Fields(f.Extra)
		if ok != (len(want) > 0) || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s (csize %d, usize %d, offset %d): ZIP64 field %v (present %v), want %v", f.Name, cs.csize, cs.usize, cs.offset, got, ok, want)
		}
		if wantV := map[bool]uint16{true: version45, false: version20}[len(want) > 0]; f.ReaderVersion != wantV || f.CreatorVersion != creator|wantV {
			t.Errorf("%s: versions %d/%x, want %d", f.Name, f.ReaderVersion, f.CreatorVersion, wantV)
		}
		if (f.CompressedSize == u32max) != (cs.csize >= u32max) || (f.UncompressedSize == u32max) != (cs.usize >= u32max) {
			t.Errorf("%s: 32-bit slots %x %x", f.Name, f.CompressedSize, f.UncompressedSize)
		}
	}
}

// endRecords returns the entry count, directory size and offset of the
// end of central directory record and whether a ZIP64 end record and its
// locator precede it, with the ZIP64 record's values.
func endRecords(t *testing.T, b []byte) (end [3]uint64, end64 *[3]uint64) {
	t.Helper()
	le := binary.LittleEndian
	e := b[len(b)-22:]
	if le.Uint32(e) != sigEnd {
		t.Fatalf("no end record: % x", e)
	}
	end = [3]uint64{uint64(le.Uint16(e[10:])), uint64(le.Uint32(e[12:])), uint64(le.Uint32(e[16:]))}
	if len(b) < 22+20+56 || le.Uint32(b[len(b)-42:]) != sigEnd64Loc {
		return end, nil
	}
	r := b[len(b)-42-56:]
	if le.Uint32(r) != sigEnd64 {
		t.Fatalf("ZIP64 locator without a ZIP64 end record")
	}
	return end, &[3]uint64{le.Uint64(r[32:]), le.Uint64(r[40:]), le.Uint64(r[48:])}
}

// TestEndRecordEntryCount writes 65,534 and 65,535 entries: 0xFFFF in the
// end record's count means "see the ZIP64 end record" (APPNOTE 4.4.1.4),
// so 65,535 entries need one, and 65,534 must not have one.
func TestEndRecordEntryCount(t *testing.T) {
	t.Parallel()
	for _, n := range []int{u16max - 1, u16max} {
		var out bytes.Buffer
		w := NewWriter(&out, 1)
		for i := range n {
			name := fmt.Sprintf("f%05d", i)
			if err := w.WriteRaw(Header{Name: name}, crc32.ChecksumIEEE([]byte(name)), 6, 6, strings.NewReader(name)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b := out.Bytes()
		end, end64 := endRecords(t, b)
		if (end64 != nil) != (n >= u16max) {
			t.Errorf("%d entries: ZIP64 end record present %v", n, end64 != nil)
		}
		if end64 != nil && (end64[0] != uint64(n) || end[0] != u16max) {
			t.Errorf("%d entries: counts %d (ZIP64) and %d", n, end64[0], end[0])
		}
		if end64 == nil && end[0] != uint64(n) {
			t.Errorf("%d entries: count %d", n, end[0])
		}
		zr := openZip(t, b)
		if len(zr.File) != n || string(readAll(t, zr.File[n-1])) != fmt.Sprintf("f%05d", n-1) {
			t.Errorf("%d entries: archive/zip reads %d", n, len(zr.File))
		}
	}
}

// TestEndRecordDirectoryOffset places the central directory at, below and
// past offset 2³²-1: its offset needs the ZIP64 end record from 2³²-1 on.
func TestEndRecordDirectoryOffset(t *testing.T) {
	t.Parallel()
	for _, start := range []int64{u32max - 1, u32max, u32max + 1, 5 << 30} {
		var out bytes.Buffer
		w := NewWriter(&out, 1)
		w.off = start
		w.dir = append(w.dir, &entry{Header: Header{Name: "x", Modified: mtime}, csize: 1, usize: 1, offset: 0})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b := out.Bytes()
		end, end64 := endRecords(t, b)
		if (end64 != nil) != (start >= u32max) {
			t.Fatalf("directory at %d: ZIP64 end record present %v", start, end64 != nil)
		}
		if end64 != nil && (end64[2] != uint64(start) || end[2] != u32max || end64[0] != 1 || end[0] != 1) {
			t.Errorf("directory at %d: ZIP64 end %v, end %v", start, *end64, end)
		}
		if end64 == nil && end[2] != uint64(start) {
			t.Errorf("directory at %d: end record says %d", start, end[2])
		}
		zr, err := zip.NewReader(&shifted{start, b}, start+int64(len(b)))
		if err != nil || len(zr.File) != 1 || zr.File[0].Name != "x" {
			t.Errorf("directory at %d: archive/zip: %v", start, err)
		}
	}
}

// TestNameLength accepts names of 1 to 65,535 bytes (the 16-bit length
// field) with every way of writing an entry, and refuses the empty name
// and 65,536 bytes without writing anything.
func TestNameLength(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", u16max)
	create := map[string]func(w *Writer, name string) error{
		"WriteRaw": func(w *Writer, name string) error {
			return w.WriteRaw(Header{Name: name}, crc32.ChecksumIEEE([]byte("d")), 1, 1, strings.NewReader("d"))
		},
		"WriteRawBytes": func(w *Writer, name string) error {
			return w.WriteRawBytes(Header{Name: name}, crc32.ChecksumIEEE([]byte("d")), 1, []byte("d"))
		},
		"Create": func(w *Writer, name string) error {
			ew, err := w.Create(Header{Name: name, Method: Deflate}, 1)
			if err == nil {
				io.WriteString(ew, "d")
				err = ew.Close()
			}
			return err
		},
		"CreateStored": func(w *Writer, name string) error {
			ew, err := w.CreateStored(Header{Name: name}, crc32.ChecksumIEEE([]byte("d")), 1)
			if err == nil {
				io.WriteString(ew, "d")
				err = ew.Close()
			}
			return err
		},
	}
	for how, f := range create {
		var out bytes.Buffer
		w := NewWriter(&out, 1)
		for _, name := range []string{"", long + "x"} {
			if err := f(w, name); err == nil {
				t.Errorf("%s: a name of %d bytes accepted", how, len(name))
			}
			if w.Offset() != 0 || w.Entries() != 0 {
				t.Errorf("%s: a refused name of %d bytes wrote %d bytes, %d entries", how, len(name), w.Offset(), w.Entries())
			}
		}
		for _, name := range []string{"a", long} {
			if err := f(w, name); err != nil {
				t.Errorf("%s: a name of %d bytes: %v", how, len(name), err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		zr := openZip(t, out.Bytes())
		if len(zr.File) != 2 || zr.File[0].Name != "a" || zr.File[1].Name != long {
			t.Fatalf("%s: %d entries read back", how, len(zr.File))
		}
		for _, f := range zr.File {
			if string(readAll(t, f)) != "d" {
				t.Errorf("%s: %d-byte name: content differs", how, len(f.Name))
			}
		}
	}
}

// TestDates checks the DOS date clamped to its range (1980 to 2107) and
// the exact "UT" timestamp written for times from 1970 to 2106.
func TestDates(t *testing.T) {
	t.Parallel()
	utc := func(y int, m time.Month, d, h, min, s int) time.Time {
		return time.Date(y, m, d, h, min, s, 0, time.UTC)
	}
	for _, c := range []struct {
		mtime, want time.Time
		exact       bool // read back from the "UT" field
	}{
		{utc(2024, 1, 2, 3, 4, 5), utc(2024, 1, 2, 3, 4, 5), true},
		{utc(1975, 6, 1, 0, 0, 0), utc(1975, 6, 1, 0, 0, 0), true},
		{utc(1960, 6, 1, 0, 0, 0), utc(1980, 1, 1, 0, 0, 0), false},
		{time.Time{}, utc(1980, 1, 1, 0, 0, 0), false},
		{utc(2107, 3, 4, 5, 6, 7), utc(2107, 3, 4, 5, 6, 6), false},
		{utc(2150, 1, 1, 0, 0, 0), utc(2107, 12, 31, 23, 59, 58), false},
	} {
		var out bytes.Buffer
		w := NewWriter(&out, 1)
		w.WriteRawBytes(Header{Name: "t", Modified: c.mtime}, crc32.ChecksumIEEE(nil), 0, nil)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		f := openZip(t, out.Bytes()).File[0]
		if !f.Modified.Equal(c.want) {
			t.Errorf("mtime %v: read back %v, want %v", c.mtime, f.Modified, c.want)
		}
		if hasUT := bytes.Contains(f.Extra, []byte{0x55, 0x54, 5, 0, 1}); hasUT != c.exact {
			t.Errorf("mtime %v: UT field present %v, want %v", c.mtime, hasUT, c.exact)
		}
	}
}

// TestMisuse covers the calls a Writer refuses: a Mark or Close inside an
// open entry, a second Close, CreateStored of a deflated entry, and any
// entry after Close.
func TestMisuse(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := NewWriter(&out, 1)
	if _, err := w.CreateStored(Header{Name: "d", Method: Deflate}, 0, 0); err == nil {
		t.Error("CreateStored with Deflate accepted")
	}
	ew, err := w.Create(Header{Name: "open", Method: Deflate}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Mark(); err == nil {
		t.Error("Mark inside an open entry accepted")
	}
	if err := w.WriteRawBytes(Header{Name: "raw"}, 0, 0, nil); err == nil {
		t.Error("WriteRawBytes inside an open entry accepted")
	}
	ew.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil {
		t.Error("second Close accepted")
	}
	size := out.Len()
	if _, err := w.Create(Header{Name: "late", Method: Deflate}, 0); err == nil {
		t.Error("Create after Close accepted")
	}
	if _, err := w.CreateStored(Header{Name: "late"}, 0, 0); err == nil {
		t.Error("CreateStored after Close accepted")
	}
	if out.Len() != size {
		t.Errorf("refused calls wrote %d bytes", out.Len()-size)
	}
	if zr := openZip(t, out.Bytes()); len(zr.File) != 1 || zr.File[0].Name != "open" {
		t.Errorf("%d entries", len(zr.File))
	}
}

var errSink = errors.New("sink failed")

// failAfter accepts n bytes, then fails every write. With short set it
// reports a short write without an error instead (breaking io.Writer's
// contract, as a buggy writer may), and with once only one write is short
// and the writes after it succeed again.
type failAfter struct {
	n           int64
	short, once bool
	failed      bool
}

func (f *failAfter) Write(p []byte) (int, error) {
	if int64(len(p)) <= f.n || f.once && f.failed {
		f.n -= min(f.n, int64(len(p)))
		return len(p), nil
	}
	k := int(f.n)
	f.n, f.failed = 0, true
	if f.short {
		return k, nil
	}
	return k, errSink
}

// writeArchive writes an archive with every kind of entry to sink and
// returns the first error, or nil.
func writeArchive(sink io.Writer) error {
	w := NewWriter(sink, 1)
	text := bytes.Repeat([]byte("archive text "), 20000) // 260 kB
	large := make([]byte, 1<<20+1000)
	for i := range large {
		large[i] = byte(i * 31 >> 5)
	}
	if err := w.WriteRaw(Header{Name: "raw"}, crc32.ChecksumIEEE(text), int64(len(text)), int64(len(text)), bytes.NewReader(text)); err != nil {
		return err
	}
	if err := w.WriteRawBytes(Header{Name: "large"}, crc32.ChecksumIEEE(large), int64(len(large)), large); err != nil {
		return err
	}
	if _, err := w.Mark(); err != nil {
		return err
	}
	stream := func(ew *EntryWriter, err error) error {
		if err == nil {
			_, err = ew.Write(large)
		}
		if err == nil {
			err = ew.Close()
		}
		return err
	}
	if err := stream(w.Create(Header{Name: "deflated", Method: Deflate}, int64(len(large)))); err != nil {
		return err
	}
	if err := stream(w.CreateStored(Header{Name: "stored"}, crc32.ChecksumIEEE(large), int64(len(large)))); err != nil {
		return err
	}
	for i := range 3000 {
		if err := w.WriteRawBytes(Header{Name: fmt.Sprint("small", i)}, crc32.ChecksumIEEE(nil), 0, nil); err != nil {
			return err
		}
	}
	return w.Close()
}

// TestFailingSink cuts the underlying writer off at points spread over the
// whole archive (inside local headers, raw data, direct writes, deflated
// and stored streams, the central directory and the end record): whatever
// call meets the failure, the archive is never reported written.
func TestFailingSink(t *testing.T) {
	t.Parallel()
	var full bytes.Buffer
	if err := writeArchive(&full); err != nil {
		t.Fatal(err)
	}
	openZip(t, full.Bytes())
	size := int64(full.Len())
	cuts := []int64{0, 1, 30, size - 1, size - 22, size - 10}
	for i := int64(1); i < 40; i++ {
		cuts = append(cuts, size*i/40)
	}
	for _, cut := range cuts {
		if err := writeArchive(&failAfter{n: cut}); !errors.Is(err, errSink) {
			t.Errorf("sink failing after %d of %d bytes: got %v, want %v", cut, size, err, errSink)
		}
		if err := writeArchive(&failAfter{n: cut, short: true}); !errors.Is(err, io.ErrShortWrite) {
			t.Errorf("sink writing short after %d of %d bytes: got %v, want io.ErrShortWrite", cut, size, err)
		}
		if err := writeArchive(&failAfter{n: cut, short: true, once: true}); !errors.Is(err, io.ErrShortWrite) {
			t.Errorf("sink writing short once after %d of %d bytes: got %v, want io.ErrShortWrite", cut, size, err)
		}
	}
	if err := writeArchive(&failAfter{n: size}); err != nil {
		t.Errorf("sink taking exactly the archive: %v", err)
	}
}

// TestWriteRawShortData gives WriteRaw less data than announced, or a
// failing reader: the error names the entry and the entry is not recorded.
func TestWriteRawShortData(t *testing.T) {
	t.Parallel()
	readErr := errors.New("source failed")
	for _, c := range []struct {
		data io.Reader
		want error
	}{
		{strings.NewReader("short"), io.EOF},
		{io.MultiReader(strings.NewReader("part"), iotest.ErrReader(readErr)), readErr},
	} {
		w := NewWriter(io.Discard, 1)
		err := w.WriteRaw(Header{Name: "entry.bin"}, 0, 100, 100, c.data)
		if !errors.Is(err, c.want) || !strings.Contains(fmt.Sprint(err), "entry.bin") {
			t.Errorf("got %v, want %v naming entry.bin", err, c.want)
		}
		if w.Entries() != 0 {
			t.Errorf("a failed entry recorded: %d entries", w.Entries())
		}
	}
}

// TestTooLarge streams more than 4 GiB into an entry announced small: its
// local header has no ZIP64 field, so Close must refuse it.
func TestTooLarge(t *testing.T) {
	t.Parallel()
	racetest.SkipLarge(t, "a 4 GiB deflated stream")
	w := NewWriter(io.Discard, 1)
	ew, err := w.Create(Header{Name: "grew", Method: Deflate}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4<<20)
	for n := int64(0); n <= u32max; n += int64(len(chunk)) {
		if _, err := ew.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := ew.Close(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Close gave %v, want ErrTooLarge", err)
	}
}

// writeRawClose writes data as a stored entry, then closes the archive.
func writeRawClose(t *testing.T, w *Writer, name string, data []byte) {
	t.Helper()
	if err := w.WriteRaw(Header{Name: name, Modified: mtime}, crc32.ChecksumIEEE(data), int64(len(data)), int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
