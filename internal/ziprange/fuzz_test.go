package ziprange

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzDir reads archives of any bytes: the end records, the entries of
// the seeds' names (from one read of the directory, or searched in small
// windows, with and without a hint) and their bytes. Nothing may panic,
// hang or hand back more bytes than an entry's record gives.
func FuzzDir(f *testing.F) {
	for _, data := range hostileArchives(f) {
		f.Add(data, false)
		f.Add(data, true)
	}
	f.Add(zipwBytes(f, manifestFiles(3)), true)
	wanted := append(names(smallFiles()), names(manifestFiles(3))...)
	f.Fuzz(func(t *testing.T, data []byte, tiny bool) {
		d, err := ReadDir(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		if tiny {
			d.small, d.window = 0, 160
		}
		for _, hint := range []Order{ListOrder(wanted), nil} {
			for _, n := range wanted {
				found, _ := d.Find([]string{n}, hint)
				if e, ok := found[n]; ok {
					readFuzzed(t, d, e)
				}
			}
		}
	})
}

func readFuzzed(t *testing.T, d *Dir, e Entry) {
	rc, err := d.Open(e)
	if err != nil {
		return
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	if uint64(n) > e.UncompressedSize || err == nil && uint64(n) != e.UncompressedSize {
		t.Fatalf("%s: read %d bytes (%v) of an entry of %d", e.Name, n, err, e.UncompressedSize)
	}
}

// FuzzFind searches directories of any bytes, whatever end records would
// say of them: every record is parsed, every window resynchronised.
func FuzzFind(f *testing.F) {
	wanted := append(names(smallFiles()), names(manifestFiles(3))...)
	for _, data := range [][]byte{zipwBytes(f, smallFiles()), zipwBytes(f, manifestFiles(3))} {
		d, err := ReadDir(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[d.off:d.off+d.len], d.count, uint16(160))
	}
	f.Fuzz(func(t *testing.T, dir []byte, count uint64, window uint16) {
		d := &Dir{ra: bytes.NewReader(dir), len: int64(len(dir)), count: count, window: int64(max(window, 1))}
		for _, hint := range []Order{ListOrder(wanted), nil} {
			for _, n := range wanted {
				found, _ := d.Find([]string{n}, hint)
				if e, ok := found[n]; ok && (e.Name != n || len(found) != 1) {
					t.Fatalf("Find(%q) gave %v", n, found)
				}
			}
		}
	})
}

// FuzzReadEnd reads the end records of any bytes and checks what it gives
// against the bytes and against archive/zip: the records it returns are
// the bytes at the offsets it gives, within the archive, and an archive
// archive/zip reads has its end record where archive/zip found it (the
// same comment) and the count archive/zip went by.
func FuzzReadEnd(f *testing.F) {
	for _, data := range hostileArchives(f) {
		f.Add(data)
		f.Add(append(bytes.Clone(data), make([]byte, 100)...)) // a writer's zero padding
	}
	f.Add(zipwBytes(f, manifestFiles(3)))
	f.Fuzz(func(t *testing.T, data []byte) {
		size := int64(len(data))
		e, err := ReadEnd(bytes.NewReader(data), size)
		if e.Record != nil {
			switch {
			case e.Off < 0 || e.Off+EndLen > size || !bytes.Equal(e.Record, data[e.Off:e.Off+EndLen]) || u32(e.Record) != SigEnd:
				t.Fatalf("end record at offset %d of %d bytes: %x", e.Off, size, e.Record)
			case size-e.Off > maxTail:
				t.Fatalf("end record at offset %d, %d bytes before the end, where archive/zip does not look", e.Off, size-e.Off)
			case err == nil && e.Off+EndLen+int64(e.Comment) > size:
				t.Fatalf("comment of %d bytes at offset %d runs past %d bytes", e.Comment, e.Off+EndLen, size)
			}
		}
		if e.Record64 != nil && (e.Off64 < 0 || e.Off64+End64Len > e.Off-End64LocLen || !bytes.Equal(e.Record64, data[e.Off64:e.Off64+End64Len]) ||
			!bytes.Equal(e.Locator, data[e.Off-End64LocLen:e.Off])) {
			t.Fatalf("ZIP64 end record at offset %d, locator before %d: %x %x", e.Off64, e.Off, e.Record64, e.Locator)
		}
		zr, zerr := zip.NewReader(bytes.NewReader(data), size)
		if zerr != nil && !errors.Is(zerr, zip.ErrInsecurePath) {
			return
		}
		if e.Record == nil {
			t.Fatalf("archive/zip reads %d entries where ReadEnd finds no end record: %v", len(zr.File), err)
		}
		if comment := string(data[e.Off+EndLen : e.Off+EndLen+int64(e.Comment)]); comment != zr.Comment {
			t.Fatalf("end record at offset %d, comment %q; archive/zip's comment %q", e.Off, comment, zr.Comment)
		}
		// archive/zip takes the ZIP64 record's count when the plain record
		// saturates a field (as it tests them: the size against 0xffff)
		// and the locator says one disk.
		count := uint64(u16(e.Record[10:]))
		saturated := count == 0xffff || u32(e.Record[12:]) == 0xffff || u32(e.Record[16:]) == 0xffffffff
		if r64, loc := e.Record64, e.Locator; r64 != nil && saturated && u32(loc[4:]) == 0 && u32(loc[16:]) == 1 {
			count = u64(r64[32:])
		}
		if uint16(count) != uint16(len(zr.File)) {
			t.Fatalf("end records count %d entries, archive/zip read %d", count, len(zr.File))
		}
	})
}
