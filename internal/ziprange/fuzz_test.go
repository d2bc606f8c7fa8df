package ziprange

import (
	"bytes"
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
