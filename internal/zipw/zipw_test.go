package zipw

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/racetest"
	"github.com/rsdump/rsdump/internal/ziptest"
)

var mtime = time.Date(2024, 1, 2, 3, 4, 6, 0, time.UTC)

func readAll(t *testing.T, f *zip.File) []byte {
	t.Helper()
	rc, err := f.Open()
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc) // archive/zip checks the CRC at EOF
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := NewWriter(&out, 6)
	raw := []byte("raw stored bytes")
	if err := w.WriteRaw(Header{Name: "raw.txt", Modified: mtime, Mode: 0o644}, crc32.ChecksumIEEE(raw), int64(len(raw)), int64(len(raw)), bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	text := bytes.Repeat([]byte("compressible text "), 1000)
	for _, h := range []Header{
		{Name: "dir/deflated.txt", Modified: mtime, Method: Deflate, Mode: 0o600},
		{Name: "ünï cödé ☃.txt", Modified: mtime, Method: Store, Mode: 0o644},
		{Name: "empty", Modified: mtime, Method: Deflate, Mode: 0o644},
	} {
		var ew *EntryWriter
		var err error
		if h.Method == Store {
			ew, err = w.CreateStored(h, crc32.ChecksumIEEE(text), int64(len(text)))
		} else {
			ew, err = w.Create(h, int64(len(text)))
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "empty" {
			ew.Write(text[:5000])
			ew.Write(text[5000:])
		}
		if err := ew.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if int64(out.Len()) != w.Offset() {
		t.Errorf("Offset %d, wrote %d", w.Offset(), out.Len())
	}
	zr, err := zip.NewReader(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"raw.txt": raw, "dir/deflated.txt": text, "ünï cödé ☃.txt": text, "empty": {}}
	if len(zr.File) != len(want) {
		t.Fatalf("%d entries, want %d", len(zr.File), len(want))
	}
	for _, f := range zr.File {
		if got := readAll(t, f); !bytes.Equal(got, want[f.Name]) {
			t.Errorf("%s: content differs", f.Name)
		}
		if !f.Modified.Equal(mtime) {
			t.Errorf("%s: modified %v, want %v", f.Name, f.Modified, mtime)
		}
	}
	if zr.File[1].Method != Deflate || zr.File[1].CompressedSize64 >= uint64(len(text)) {
		t.Errorf("deflated entry: method %d, csize %d", zr.File[1].Method, zr.File[1].CompressedSize64)
	}
	if zr.File[2].Flags&flagDescriptor != 0 || zr.File[1].Flags&flagDescriptor == 0 {
		t.Errorf("descriptor flags: stored %x, deflated %x; want none on stored data", zr.File[2].Flags, zr.File[1].Flags)
	}
	if zr.File[2].Flags&flagUTF8 == 0 || zr.File[0].Flags&flagUTF8 != 0 {
		t.Errorf("UTF-8 flag wrong: %x %x", zr.File[2].Flags, zr.File[0].Flags)
	}
	if zr.File[1].Mode().Perm() != 0o600 {
		t.Errorf("mode %v", zr.File[1].Mode())
	}
}

func TestRollback(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := NewWriter(&out, 1)
	write := func(name, data string) {
		ew, err := w.Create(Header{Name: name, Modified: mtime, Method: Deflate}, int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(ew, data)
		if err := ew.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("keep", "kept")
	m, err := w.Mark()
	if err != nil {
		t.Fatal(err)
	}
	if int64(out.Len()) != m.Offset() {
		t.Fatalf("Mark did not flush: %d vs %d", out.Len(), m.Offset())
	}
	write("drop", "dropped data")
	w.Mark() // flush the dropped entry out, as a real caller's file would have it
	out.Truncate(int(m.Offset()))
	w.Rollback(m)
	write("after", "after")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		readAll(t, f)
	}
	if fmt.Sprint(names) != "[keep after]" {
		t.Errorf("entries %v, want [keep after]", names)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	w := NewWriter(io.Discard, 1)
	if _, err := w.Create(Header{Name: "", Method: Deflate}, 0); err == nil {
		t.Error("empty name accepted")
	}
	if _, err := w.Create(Header{Name: "x", Method: 99}, 0); err == nil {
		t.Error("method 99 accepted")
	}
	if _, err := w.Create(Header{Name: "x", Method: Store}, 0); err == nil {
		t.Error("stored entry with a data descriptor accepted")
	}
	ew, _ := w.Create(Header{Name: "x", Method: Deflate}, 0)
	if _, err := w.Create(Header{Name: "y", Method: Deflate}, 0); err == nil {
		t.Error("second entry while first open accepted")
	}
	if err := w.Close(); err == nil {
		t.Error("close with open entry accepted")
	}
	ew.Close()
	for _, data := range []string{"other", "long data", "dat"} {
		ew, err := w.CreateStored(Header{Name: "s"}, crc32.ChecksumIEEE([]byte("data")), 4)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(ew, data)
		if err := ew.Close(); !errors.Is(err, ErrMismatch) {
			t.Errorf("stored %q announced as \"data\": Close gave %v, want ErrMismatch", data, err)
		}
		w.Rollback(Mark{w.off, len(w.dir)})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRaw(Header{Name: "z"}, 0, 0, 0, nil); err == nil {
		t.Error("write after close accepted")
	}
}

func TestOver65kEntries(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping 70,000-entry archive in -short mode")
	}
	var out bytes.Buffer
	w := NewWriter(&out, 1)
	const n = 70000
	for i := range n {
		name := fmt.Sprintf("f%05d", i)
		if err := w.WriteRaw(Header{Name: name, Modified: mtime}, crc32.ChecksumIEEE([]byte(name)), 6, 6, bytes.NewReader([]byte(name))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) != n {
		t.Fatalf("%d entries, want %d", len(zr.File), n)
	}
	if got := readAll(t, zr.File[n-1]); string(got) != fmt.Sprintf("f%05d", n-1) {
		t.Errorf("last entry %q", got)
	}
}

// TestZip64Large writes a real archive holding a 4.1 GiB streamed entry
// and a raw entry placed past the 4 GiB offset, then has every reader a
// user might have test it.
func TestZip64Large(t *testing.T) {
	t.Parallel()
	racetest.SkipLarge(t, "a 4 GiB archive")
	path := filepath.Join(t.TempDir(), "big.zip")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, 1)
	const size = 4<<30 + 100<<20
	chunk := make([]byte, 1<<20)
	crc := crc32.NewIEEE()
	for i := int64(0); i < size; i += int64(len(chunk)) {
		chunk[0] = byte(i >> 20) // vary the content so the CRC means something
		crc.Write(chunk)
	}
	ew, err := w.CreateStored(Header{Name: "big.bin", Modified: mtime, Mode: 0o644}, crc.Sum32(), size)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < size; i += int64(len(chunk)) {
		chunk[0] = byte(i >> 20)
		ew.Write(chunk)
	}
	if err := ew.Close(); err != nil {
		t.Fatal(err)
	}
	writeRawClose(t, w, "small.txt", []byte("after the 4 GiB mark"))
	f.Close()
	ziptest.CheckTools(t, path)
}
