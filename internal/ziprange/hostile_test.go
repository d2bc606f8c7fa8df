package ziprange

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
)

// toZip64 rewrites the end of an archive without a comment as a ZIP64
// one: a ZIP64 end record and locator, and a plain end record whose
// count, size and offset are saturated.
func toZip64(data []byte) []byte {
	end := data[len(data)-EndLen:]
	count, size, off := u16(end[10:]), u32(end[12:]), u32(end[16:])
	out := bytes.Clone(data[:len(data)-EndLen])
	z := len(out)
	out = binary.LittleEndian.AppendUint32(out, SigEnd64)
	out = binary.LittleEndian.AppendUint64(out, End64Len-12)
	out = binary.LittleEndian.AppendUint32(out, 45<<16|45)
	out = binary.LittleEndian.AppendUint64(out, 0) // disks
	out = binary.LittleEndian.AppendUint64(out, uint64(count))
	out = binary.LittleEndian.AppendUint64(out, uint64(count))
	out = binary.LittleEndian.AppendUint64(out, uint64(size))
	out = binary.LittleEndian.AppendUint64(out, uint64(off))
	out = binary.LittleEndian.AppendUint32(out, SigEnd64Loc)
	out = binary.LittleEndian.AppendUint32(out, 0)
	out = binary.LittleEndian.AppendUint64(out, uint64(z))
	out = binary.LittleEndian.AppendUint32(out, 1)
	out = binary.LittleEndian.AppendUint32(out, SigEnd)
	out = binary.LittleEndian.AppendUint32(out, 0)
	out = binary.LittleEndian.AppendUint32(out, 0xffffffff)
	out = binary.LittleEndian.AppendUint64(out, 0xffffffffffffffff)
	return binary.LittleEndian.AppendUint16(out, 0)
}

// hostileArchives are small archives, plain and ZIP64, with their files.
func hostileArchives(t testing.TB) map[string][]byte {
	small := zipwBytes(t, smallFiles())
	return map[string][]byte{"zipw": small, "zip64": toZip64(small)}
}

func want(t *testing.T, data []byte) (map[string][]byte, []string) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]byte)
	var names []string
	for _, f := range zr.File {
		out[f.Name] = readZip(t, f)
		names = append(names, f.Name)
	}
	return out, names
}

// TestToZip64: the ZIP64 rewrite reads the same, its counts from the
// ZIP64 end record.
func TestToZip64(t *testing.T) {
	t.Parallel()
	data := toZip64(zipwBytes(t, smallFiles()))
	d, err := ReadDir(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if !d.zip64 || d.Count() != uint64(len(smallFiles())) {
		t.Fatalf("zip64 %v, count %d", d.zip64, d.Count())
	}
	checkAgainst(t, bytes.NewReader(data), int64(len(data)), inOrder, 1)
}

// TestFlips changes every byte of small archives in turn, and reads every
// entry, from one read of the directory and from windows: each change
// gives an error or the bytes of the archive unchanged, never other
// bytes and never a panic.
func TestFlips(t *testing.T) {
	t.Parallel()
	for name, data := range hostileArchives(t) {
		orig, names := want(t, data)
		errs := 0
		for i := range data {
			for _, x := range []byte{0xff, 0x01, 0x80} {
				bad := bytes.Clone(data)
				bad[i] ^= x
				for _, tiny := range []bool{false, true} {
					got, err := readAll(bad, int64(len(bad)), names, ListOrder(names), tiny)
					if err != nil {
						errs++
						continue
					}
					for n, b := range got {
						if !bytes.Equal(b, orig[n]) {
							t.Fatalf("%s: byte %d ^ %#x (tiny %v): %s reads %q without an error, not %q", name, i, x, tiny, n, b, orig[n])
						}
					}
				}
			}
		}
		t.Logf("%s: %d bytes, %d of %d changes an error", name, len(data), errs, 6*len(data))
	}
}

// TestTruncated: an archive cut at any length, or one whose reader ends
// before the size given, is an error.
func TestTruncated(t *testing.T) {
	t.Parallel()
	for name, data := range hostileArchives(t) {
		_, names := want(t, data)
		for n := range len(data) {
			if _, err := readAll(data[:n], int64(n), names, ListOrder(names), false); err == nil {
				t.Errorf("%s cut at %d of %d bytes read without an error", name, n, len(data))
			}
			if _, err := readAll(data[:n], int64(len(data)), names, ListOrder(names), false); err == nil {
				t.Errorf("%s read to %d of %d bytes read without an error", name, n, len(data))
			}
		}
	}
}

// TestLocatorAnywhere points the ZIP64 end locator at every offset.
func TestLocatorAnywhere(t *testing.T) {
	t.Parallel()
	data := toZip64(zipwBytes(t, smallFiles()))
	orig, names := want(t, data)
	loc := len(data) - EndLen - End64LocLen
	right := int64(u64(data[loc+8:]))
	for _, off := range append(offsets(len(data)+100), math.MaxInt64, math.MaxUint64, 1<<63+5) {
		bad := bytes.Clone(data)
		binary.LittleEndian.PutUint64(bad[loc+8:], uint64(off))
		got, err := readAll(bad, int64(len(bad)), names, ListOrder(names), false)
		if int64(off) == right {
			if err != nil || !bytes.Equal(got["a.txt"], orig["a.txt"]) {
				t.Errorf("locator at its record: %v", err)
			}
		} else if err == nil {
			t.Errorf("locator pointing at %d, not at the ZIP64 end record at %d: no error", off, right)
		}
	}
}

func offsets(n int) []uint64 {
	var out []uint64
	for i := range n {
		out = append(out, uint64(i))
	}
	return out
}

// TestLies: records that lie, one at a time, each an error naming the
// entry and what is wrong.
func TestLies(t *testing.T) {
	t.Parallel()
	files := smallFiles()
	data := zipwBytes(t, files)
	cd := int(u32(data[len(data)-6:]))
	local := func(b []byte, name string) int { return bytes.Index(b, []byte(name)) - LocalLen }
	central := func(b []byte, name string) int { return cd + bytes.Index(b[cd:], []byte(name)) - CentralLen }
	put32 := func(b []byte, at int, v uint32) { binary.LittleEndian.PutUint32(b[at:], v) }
	put16 := func(b []byte, at int, v uint16) { binary.LittleEndian.PutUint16(b[at:], v) }
	bLen := uint32(len(files[1].data))
	for _, tc := range []struct {
		name   string
		change func(b []byte)
		err    string
	}{
		{"local header of another entry", func(b []byte) { put32(b, central(b, "a.txt")+42, uint32(local(b, "dir/b.txt"))) },
			fmt.Sprintf(`a.txt: the local header at offset %d names "dir/b.txt"`, local(data, "dir/b.txt"))},
		{"local header of a longer name", func(b []byte) { put32(b, central(b, "empty")+42, uint32(local(b, "ünï"))) },
			fmt.Sprintf(`empty: the local header at offset %d names "ünï cödé ☃.txt"`, local(data, "ünï"))},
		{"CRC-32", func(b []byte) { b[central(b, "a.txt")+16] ^= 1 }, "a.txt: CRC-32 "},
		{"larger than said", func(b []byte) { put32(b, central(b, "dir/b.txt")+24, bLen-1) },
			fmt.Sprintf("dir/b.txt: more than the %d bytes the central directory gives", bLen-1)},
		{"smaller than said", func(b []byte) { put32(b, central(b, "dir/b.txt")+24, bLen+1) },
			fmt.Sprintf("dir/b.txt: %d bytes, the central directory gives %d", bLen, bLen+1)},
		{"encrypted", func(b []byte) { b[central(b, "a.txt")+8] |= 1 }, "a.txt: the entry is encrypted"},
		{"encrypted locally", func(b []byte) { b[local(b, "a.txt")+6] |= 1 }, "a.txt: the local header flags the entry as encrypted"},
		{"unknown method", func(b []byte) { put16(b, central(b, "a.txt")+10, 12) }, "a.txt: compression method 12 is not supported"},
		{"local method", func(b []byte) { put16(b, local(b, "a.txt")+8, 8) }, "a.txt: the local header gives compression method 8, the central directory 0"},
		{"stored sizes differ", func(b []byte) { put32(b, central(b, "a.txt")+20, 3) }, "a.txt: stored entry of 17 bytes has a compressed size of 3"},
		{"data into the directory", func(b []byte) {
			put32(b, central(b, "ünï")+20, uint32(cd))
			put32(b, central(b, "ünï")+24, uint32(cd))
		}, "ünï cödé ☃.txt: its " + fmt.Sprint(cd) + " bytes of data at offset"},
		{"header in the directory", func(b []byte) { put32(b, central(b, "a.txt")+42, uint32(cd)) },
			fmt.Sprintf("a.txt: local header offset %d is not before the central directory at offset %d", cd, cd)},
		{"no local header", func(b []byte) { b[local(b, "a.txt")] = 'X' }, "a.txt: no local header at offset 0"},
		{"name past the directory", func(b []byte) { put16(b, central(b, "nul\x00name")+28, 0xffff) }, "run past the directory's end"},
		{"no record signature", func(b []byte) { b[central(b, "empty")] = 'X' }, "no record signature"},
		{"count", func(b []byte) { put16(b, len(b)-12, 6); put16(b, len(b)-14, 6) }, "the central directory holds 5 records, the end records count 6"},
		{"count too large", func(b []byte) { put16(b, len(b)-12, 60) }, "the end records count 60 entries, more than a central directory of"},
		{"directory past its end", func(b []byte) { put32(b, len(b)-10, uint32(len(b))) }, "past the end records at offset"},
		{"directory offset", func(b []byte) { put32(b, len(b)-6, uint32(cd-1)) }, "no record signature"},
		{"name missing", func(b []byte) { b[central(b, "dir/b.txt")+CentralLen] = 'D' }, "dir/b.txt: " + ErrNotFound.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := bytes.Clone(data)
			tc.change(bad)
			_, err := readAll(bad, int64(len(bad)), names(files), nil, false)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want one with %q", err, tc.err)
			}
		})
	}
}

// TestWrongHint: a hint that places names anywhere, or nowhere, finds
// them all the same.
func TestWrongHint(t *testing.T) {
	t.Parallel()
	files := manifestFiles(6000)
	data := zipwBytes(t, files)
	d, err := ReadDir(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for hname, hint := range map[string]Order{
		"every name first":     func(string) (int, int, bool) { return 0, 6001, true },
		"every name last":      func(string) (int, int, bool) { return 6000, 6001, true },
		"out of range":         func(string) (int, int, bool) { return 7000, 6001, true },
		"negative":             func(string) (int, int, bool) { return -1, 6001, true },
		"no total":             func(string) (int, int, bool) { return 3, 0, true },
		"scrambled":            func(n string) (int, int, bool) { return len(n) * 7919 % 6001, 6001, true },
		"knows only the first": ListOrder(names(files[:1])),
	} {
		for i := 0; i < len(files); i += 1499 {
			found, err := d.Find([]string{files[i].name}, hint)
			if err != nil {
				t.Fatalf("%s: %v", hname, err)
			}
			if got, err := readEntry(d, found[files[i].name]); err != nil || !bytes.Equal(got, files[i].data) {
				t.Fatalf("%s: %s: %v, or bytes differ", hname, files[i].name, err)
			}
		}
	}
}

// TestBomb: an entry whose directory record says 1,000 bytes and whose
// data inflates to 64 MiB hands back at most 1,000 bytes, then an error,
// after reading a little of its compressed data; no more than 1,001
// inflated bytes are copied into the reader's buffer.
func TestBomb(t *testing.T) {
	t.Parallel()
	files := []file{{"bomb", make([]byte, 64<<20), Deflate}, {"after", []byte("x"), Store}}
	data := zipwBytes(t, files)
	cd := int(u32(data[len(data)-6:]))
	rec := cd + bytes.Index(data[cd:], []byte("bomb")) - CentralLen
	binary.LittleEndian.PutUint32(data[rec+24:], 1000)
	c := &counter{ra: bytes.NewReader(data)}
	d, err := ReadDir(c, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	found, err := d.Find([]string{"bomb"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.reset(0, 0)
	rc, err := d.Open(found["bomb"])
	if err != nil {
		t.Fatal(err)
	}
	p := bytes.Repeat([]byte{0xaa}, 64<<10)
	n, err := rc.Read(p)
	if n > 1000 || err == nil || !strings.Contains(err.Error(), "bomb: more than the 1000 bytes") {
		t.Errorf("read %d bytes, error %v", n, err)
	}
	if k := bytes.Count(p[1001:], []byte{0xaa}); k != len(p)-1001 {
		t.Errorf("%d inflated bytes copied into the buffer past the 1,001 bytes", len(p)-1001-k)
	}
	if n, err := rc.Read(p); n != 0 || err == nil {
		t.Errorf("read after the error: %d, %v", n, err)
	}
	t.Logf("compressed %d bytes; read %d of them", found["bomb"].CompressedSize, c.total)
	if c.total > 64<<10 {
		t.Errorf("read %d bytes of compressed data to hand back 1000", c.total)
	}
}

// TestCommentWithEnd: an archive comment that holds an end record's
// signature is read as archive/zip reads it: an error when that record's
// own comment would run past the archive, an empty archive when not.
func TestCommentWithEnd(t *testing.T) {
	t.Parallel()
	for _, fakeComment := range []uint16{1000, 0} {
		data := zipwBytes(t, smallFiles())
		fake := binary.LittleEndian.AppendUint32(nil, SigEnd)
		fake = append(fake, make([]byte, 16)...) // no entries
		fake = binary.LittleEndian.AppendUint16(fake, fakeComment)
		binary.LittleEndian.PutUint16(data[len(data)-2:], uint16(len(fake)))
		data = append(data, fake...)
		zr, zerr := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		d, err := ReadDir(bytes.NewReader(data), int64(len(data)))
		switch {
		case fakeComment > 0 && (err == nil || zerr == nil):
			t.Errorf("end record in the comment, its comment past the end: %v; archive/zip: %v", err, zerr)
		case fakeComment == 0 && (err != nil || zerr != nil || d.Count() != 0 || len(zr.File) != 0):
			t.Errorf("end record of no entries in the comment: %v; archive/zip: %v", err, zerr)
		}
	}
}
