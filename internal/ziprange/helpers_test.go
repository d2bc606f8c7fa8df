package ziprange

import (
	"archive/zip"
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/rsdump/rsdump/internal/zipw"
)

var mtime = time.Date(2024, 1, 2, 3, 4, 6, 0, time.UTC)

type file struct {
	name   string
	data   []byte
	method uint16
}

// writeZipw writes files with internal/zipw as pack does: stored entries
// with their CRC-32 in the local header, deflated ones compressed ahead
// and appended raw, and every hundredth of those streamed with a data
// descriptor.
func writeZipw(t testing.TB, w io.Writer, files []file) {
	t.Helper()
	zw := zipw.NewWriter(w, 1)
	var comp bytes.Buffer
	fw, _ := flate.NewWriter(&comp, 1)
	for i, f := range files {
		h := zipw.Header{Name: f.name, Modified: mtime, Method: f.method, Mode: 0o644}
		crc := crc32.ChecksumIEEE(f.data)
		var ew *zipw.EntryWriter
		var err error
		switch {
		case f.method == Store:
			ew, err = zw.CreateStored(h, crc, int64(len(f.data)))
		case i%100 == 1:
			ew, err = zw.Create(h, int64(len(f.data)))
		default:
			comp.Reset()
			fw.Reset(&comp)
			fw.Write(f.data)
			fw.Close()
			if err := zw.WriteRawBytes(h, crc, int64(len(f.data)), comp.Bytes()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		ew.Write(f.data)
		if err := ew.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

func zipwBytes(t testing.TB, files []file) []byte {
	var b bytes.Buffer
	writeZipw(t, &b, files)
	return b.Bytes()
}

// manifestFiles are n bitstreams in manifest order, as pack writes them:
// names of about 40 bytes, about 1 KiB of data each, stored and deflated
// in turn, and manifest.xml last.
func manifestFiles(n int) []file {
	files := make([]file, 0, n+1)
	for i := range n {
		data := fmt.Appendf(nil, "bitstream %d: %s", i, bytes.Repeat([]byte{byte('a' + i%26)}, 1000+i%50))
		files = append(files, file{name: fmt.Sprintf("resources/collection/item-%05d/file.txt", i), data: data, method: uint16(i%2) * Deflate})
	}
	return append(files, file{name: "manifest.xml", data: []byte("<urlset/>"), method: Deflate})
}

func names(files []file) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.name)
	}
	return out
}

// smallFiles is a small archive with every kind of entry: stored,
// deflated (with a data descriptor), empty, a non-ASCII name, a name
// holding a NUL.
func smallFiles() []file {
	return []file{
		{"a.txt", []byte("stored bytes of a"), Store},
		{"dir/b.txt", bytes.Repeat([]byte("deflated text of b "), 40), Deflate},
		{"empty", nil, Deflate},
		{"ünï cödé ☃.txt", []byte("snow"), Store},
		{"nul\x00name", []byte("after a NUL"), Deflate},
	}
}

// tool writes an archive with an external command run in dir, skipping
// the test when the command is missing.
func tool(t *testing.T, dir string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath(args[0]); err != nil {
		t.Skipf("%s not installed: %v", args[0], err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeTree writes n files under dir/tree for the zip command.
func writeTree(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		p := filepath.Join(dir, "tree", fmt.Sprintf("sub-%02d", i%10), fmt.Sprintf("file-number-%05d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat(fmt.Appendf(nil, "line of file %d\n", i), i%40), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// counter counts the bytes read through it, and those read within
// [lo, hi).
type counter struct {
	ra     io.ReaderAt
	mu     sync.Mutex
	total  int64
	lo, hi int64
	inside int64
	reads  int
}

func (c *counter) ReadAt(p []byte, off int64) (int, error) {
	c.mu.Lock()
	c.total += int64(len(p))
	c.inside += max(0, min(off+int64(len(p)), c.hi)-max(off, c.lo))
	c.reads++
	c.mu.Unlock()
	return c.ra.ReadAt(p, off)
}

func (c *counter) reset(lo, hi int64) {
	c.mu.Lock()
	c.total, c.inside, c.reads, c.lo, c.hi = 0, 0, 0, lo, hi
	c.mu.Unlock()
}

// checkAgainst finds the entries of the archive ra, of size bytes, one at
// a time (every step-th of them) and all at once, with hint, opens them,
// and compares what it got with archive/zip's reading of the same bytes.
func checkAgainst(t *testing.T, ra io.ReaderAt, size int64, hint func([]string) Order, step int) {
	t.Helper()
	zr, err := zip.NewReader(ra, size)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ReadDir(ra, size)
	if err != nil {
		t.Fatal(err)
	}
	if d.Count() != uint64(len(zr.File)) {
		t.Errorf("Count %d, archive/zip reads %d entries", d.Count(), len(zr.File))
	}
	var all []string
	for _, f := range zr.File {
		all = append(all, f.Name)
	}
	order := hint(all)
	for i, f := range zr.File {
		if i%step != 0 && i != len(zr.File)-1 {
			continue
		}
		got, err := d.Find([]string{f.Name}, order)
		if err != nil {
			t.Fatalf("Find %q: %v", f.Name, err)
		}
		checkEntry(t, d, got[f.Name], f)
	}
	got, err := d.Find(all, order)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(all) {
		t.Fatalf("Find of all %d names found %d", len(all), len(got))
	}
	for i, f := range zr.File {
		if i%step == 0 {
			checkEntry(t, d, got[f.Name], f)
		}
	}
}

// checkEntry compares e with f and the bytes Open gives with those
// archive/zip reads, a block at a time: an entry may be 4.5 GiB.
func checkEntry(t *testing.T, d *Dir, e Entry, f *zip.File) {
	t.Helper()
	if e.Name != f.Name || e.Method != f.Method || e.Flags != f.Flags || e.CRC32 != f.CRC32 ||
		e.CompressedSize != f.CompressedSize64 || e.UncompressedSize != f.UncompressedSize64 {
		t.Fatalf("entry %+v, archive/zip reads %+v", e, f.FileHeader)
	}
	want, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	got, err := d.Open(e)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	a, b := make([]byte, 64<<10), make([]byte, 64<<10)
	for off := 0; ; off += len(a) {
		n, errGot := io.ReadFull(got, a)
		m, errWant := io.ReadFull(want, b)
		if !bytes.Equal(a[:n], b[:m]) {
			t.Fatalf("%s: bytes differ from archive/zip's in the 64 KiB at %d", f.Name, off)
		}
		if errGot != errWant && (errGot == nil || errWant == nil) || errGot != nil && errGot != io.EOF && errGot != io.ErrUnexpectedEOF {
			t.Fatalf("%s: at %d: %v; archive/zip: %v", f.Name, off, errGot, errWant)
		}
		if errGot != nil {
			return
		}
	}
}

func readZip(t *testing.T, f *zip.File) []byte {
	t.Helper()
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("archive/zip: %s: %v", f.Name, err)
	}
	return b
}

func readEntry(d *Dir, e Entry) ([]byte, error) {
	rc, err := d.Open(e)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// readAll finds names in the archive data with hint and reads them all.
// tiny makes the directory large and the windows small, and finds the
// names one at a time, so that the search, not one read of the
// directory, finds them.
func readAll(data []byte, size int64, wanted []string, hint Order, tiny bool) (map[string][]byte, error) {
	d, err := ReadDir(bytes.NewReader(data), size)
	if err != nil {
		return nil, err
	}
	find := d.Find
	if tiny {
		find = func(names []string, hint Order) (map[string]Entry, error) { return findEach(d, names, hint) }
	}
	found, err := find(wanted, hint)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte)
	for _, n := range wanted {
		if out[n], err = readEntry(d, found[n]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// findEach finds names one at a time in windows of 160 bytes.
func findEach(d *Dir, names []string, hint Order) (map[string]Entry, error) {
	d.small, d.window = 0, 160
	found := make(map[string]Entry)
	for _, n := range names {
		one, err := d.Find([]string{n}, hint)
		if err != nil {
			return nil, err
		}
		found[n] = one[n]
	}
	return found, nil
}
