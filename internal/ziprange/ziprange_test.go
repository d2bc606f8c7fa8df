package ziprange

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/racetest"
	"github.com/rsdump/rsdump/internal/ziptest"
	"github.com/rsdump/rsdump/internal/zipw"
)

// inOrder hints the directory's own order; sorted hints names sorted, the
// order of a manifest that does not match the directory's; none gives no
// hint.
var (
	inOrder = ListOrder
	sorted  = func(n []string) Order { return ListOrder(slices.Sorted(slices.Values(n))) }
	none    = func([]string) Order { return nil }
)

// TestZipw: archives internal/zipw writes, small (read whole) and with a
// directory of 1.3 MB (searched), both read as archive/zip reads them.
func TestZipw(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 10, 12000} {
		data := zipwBytes(t, manifestFiles(n))
		for hname, hint := range map[string]func([]string) Order{"in order": inOrder, "sorted": sorted, "none": none} {
			t.Run(fmt.Sprintf("%d/%s", n, hname), func(t *testing.T) {
				checkAgainst(t, bytes.NewReader(data), int64(len(data)), hint, max(1, n/300))
			})
		}
	}
}

// TestZipwZip64Entries: 70,000 entries, so the end records are ZIP64
// (the plain count saturates at 65,535) and the directory is 6 MB.
func TestZipwZip64Entries(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping 70,000-entry archive in -short mode")
	}
	files := manifestFiles(70000)
	for i := range files {
		files[i].data = files[i].data[:min(20, len(files[i].data))]
	}
	data := zipwBytes(t, files)
	d, err := ReadDir(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if !d.zip64 || d.Count() != 70001 {
		t.Fatalf("zip64 %v, count %d: the ZIP64 end record was not read", d.zip64, d.Count())
	}
	checkAgainst(t, bytes.NewReader(data), int64(len(data)), inOrder, 1000)
	checkAgainst(t, bytes.NewReader(data), int64(len(data)), none, 7000)
}

// TestZipwZip64Offsets: a stored entry of 4.5 GiB, then entries whose
// local headers lie past 4 GiB, so that sizes and offsets come from ZIP64
// extra fields, in an archive of zeros held sparse.
func TestZipwZip64Offsets(t *testing.T) {
	t.Parallel()
	racetest.SkipLarge(t, "a 4.5 GiB ZIP64 archive")
	const big = 4<<30 + 512<<20
	var s ziptest.Sparse
	w := zipw.NewWriter(&s, 1)
	if err := w.WriteRaw(zipw.Header{Name: "zeros", Modified: mtime}, ziptest.ZerosCRC(big), big, big, ziptest.Zeros(big)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		data := fmt.Appendf(nil, "entry %d past 4 GiB", i)
		if err := w.WriteRawBytes(zipw.Header{Name: fmt.Sprintf("after-%d", i), Modified: mtime}, crc32.ChecksumIEEE(data), int64(len(data)), data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := ReadDir(&s, s.Size())
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(&s, s.Size())
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"zeros", "after-0", "after-1", "after-2"}
	found, err := d.Find(all, ListOrder(all))
	if err != nil {
		t.Fatal(err)
	}
	if e := found["after-2"]; e.HeaderOffset < 1<<32 || found["zeros"].UncompressedSize != big {
		t.Fatalf("entries %+v: the ZIP64 fields were not read", found)
	}
	for _, f := range zr.File {
		checkEntry(t, d, found[f.Name], f)
	}
}

// TestPython: archives Python's zipfile writes (resync writes its
// packages so): a comment, a directory entry, a forced ZIP64 entry, and
// one of 4,000 entries whose directory is searched.
func TestPython(t *testing.T) {
	t.Parallel()
	const script = `import sys, zipfile
with zipfile.ZipFile(sys.argv[1], 'w') as z:
    z.comment = b'written by zipfile ' * 10
    for i in range(int(sys.argv[2])):
        name = 'resources/python/entry-%06d-with-a-longer-name.txt' % i
        data = ('line of %s\n' % name).encode() * (i % 7)
        z.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED if i % 2 else zipfile.ZIP_STORED)
    z.writestr('dir/', b'')
    z.writestr('ünïcode ☃.txt', b'snow', compress_type=zipfile.ZIP_DEFLATED)
    with z.open('forced-zip64.bin', 'w', force_zip64=True) as f:
        f.write(b'x' * 1000)
`
	for _, n := range []string{"5", "4000"} {
		dir := t.TempDir()
		tool(t, dir, "python3", "-c", script, "p.zip", n)
		data := readFile(t, filepath.Join(dir, "p.zip"))
		for hname, hint := range map[string]func([]string) Order{"in order": inOrder, "sorted": sorted, "none": none} {
			t.Run(n+"/"+hname, func(t *testing.T) {
				checkAgainst(t, bytes.NewReader(data), int64(len(data)), hint, 50)
			})
		}
	}
}

// TestInfoZip: archives the zip command writes: its extra fields,
// directory entries, a long comment, an entry streamed from stdin (ZIP64
// local header), and 3,000 entries listed in the order zip met them.
func TestInfoZip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, 3000)
	tool(t, dir, "zip", "-q", "-r", "z.zip", "tree")
	tool(t, dir, "sh", "-c", "printf 'from stdin' | zip -q s.zip - && head -c 5000 z.zip | od | zip -q -z s.zip")
	for _, name := range []string{"z.zip", "s.zip"} {
		data := readFile(t, filepath.Join(dir, name))
		for hname, hint := range map[string]func([]string) Order{"in order": inOrder, "sorted": sorted, "none": none} {
			t.Run(name+"/"+hname, func(t *testing.T) {
				checkAgainst(t, bytes.NewReader(data), int64(len(data)), hint, 40)
			})
		}
	}
}

// TestBytesRead: in a package of 10,000 entries in manifest order, whose
// central directory is about 950 KB, finding one entry reads one window
// of the directory, not all of it, and a few when the hint is a little
// off; without a hint, or with a wrong one, the whole directory is read
// once and the entry still found.
func TestBytesRead(t *testing.T) {
	t.Parallel()
	files := manifestFiles(10000)
	data := zipwBytes(t, files)
	manifest := names(files[:len(files)-1])
	c := &counter{ra: bytes.NewReader(data)}
	d, err := ReadDir(c, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("archive %d bytes, central directory %d bytes at offset %d; ReadDir read %d bytes in %d reads", len(data), d.len, d.off, c.total, c.reads)
	if c.total > tailGuess {
		t.Errorf("ReadDir read %d bytes, more than the tail of %d", c.total, tailGuess)
	}
	reversed := slices.Clone(manifest)
	slices.Reverse(reversed)
	// A hint a few hundred entries off makes the search move its window.
	inManifest := ListOrder(manifest)
	shifted := func(by int) Order {
		return func(name string) (int, int, bool) {
			pos, total, ok := inManifest(name)
			return min(max(pos+by, 0), total-1), total, ok
		}
	}
	for _, tc := range []struct {
		name    string
		hint    Order
		maxRead int64 // of the directory
	}{
		{"manifest order", ListOrder(manifest), window},
		{"hint 700 entries early", shifted(-700), 3 * window},
		{"hint 700 entries late", shifted(700), 3 * window},
		{"no hint", nil, d.len},
		{"reversed", ListOrder(reversed), d.len + maxWindows*window},
	} {
		for _, i := range []int{0, 5000, 9999} {
			want := files[i]
			c.reset(d.off, d.off+d.len)
			found, err := d.Find([]string{want.name}, tc.hint)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			findRead := c.inside
			c.reset(0, d.off)
			got, err := readEntry(d, found[want.name])
			if err != nil || !bytes.Equal(got, want.data) {
				t.Fatalf("%s: %s: %v, or bytes differ", tc.name, want.name, err)
			}
			t.Logf("%s: entry %d: Find read %d bytes of the directory; Open and reading read %d bytes (%d compressed)", tc.name, i, findRead, c.total, found[want.name].CompressedSize)
			if findRead > tc.maxRead {
				t.Errorf("%s: finding entry %d read %d bytes of the directory, more than %d", tc.name, i, findRead, tc.maxRead)
			}
			if tc.hint == nil && findRead < int64(i)*CentralLen {
				t.Errorf("%s: found entry %d in %d bytes of the directory without a hint", tc.name, i, findRead)
			}
			if max := int64(LocalLen+len(want.name)) + int64(found[want.name].CompressedSize); c.total > max {
				t.Errorf("%s: Open read %d bytes, more than the local header and data (%d)", tc.name, c.total, max)
			}
		}
	}
}

// TestFindMany: more names than windows can search read the directory
// once; a name missing is an error naming it, and the others are found.
func TestFindMany(t *testing.T) {
	t.Parallel()
	files := manifestFiles(10000)
	data := zipwBytes(t, files)
	c := &counter{ra: bytes.NewReader(data)}
	d, err := ReadDir(c, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 0; i < 10000; i += 500 {
		want = append(want, files[i].name)
	}
	c.reset(d.off, d.off+d.len)
	found, err := d.Find(want, ListOrder(names(files)))
	if err != nil || len(found) != len(want) {
		t.Fatalf("found %d of %d: %v", len(found), len(want), err)
	}
	if c.inside > d.len {
		t.Errorf("%d names: read %d bytes of a directory of %d", len(want), c.inside, d.len)
	}
	missing := []string{"resources/collection/item-00010/file.tx", "resources/collection/item-00010/file.txt\x00"}
	found, err = d.Find(append(missing, files[10].name), ListOrder(names(files)))
	if !errors.Is(err, ErrNotFound) || len(found) != 1 {
		t.Fatalf("Find of two missing names: %v, found %d", err, len(found))
	}
	for _, m := range missing {
		if !strings.Contains(err.Error(), fmt.Sprintf("%s: ", m)) {
			t.Errorf("error %q does not name %q", err, m)
		}
	}
}

// TestResync: names holding the directory's record signature, followed
// by what parses as a record with no name, extra field or comment, do
// not throw the search off the records.
func TestResync(t *testing.T) {
	t.Parallel()
	files := manifestFiles(8000)
	for i := range files {
		files[i].name = fmt.Sprintf("resources/%0*d/PK\x01\x02%s/file.txt", 5+i%13, i, strings.Repeat("\x00", 42))
	}
	data := zipwBytes(t, files)
	c := &counter{ra: bytes.NewReader(data)}
	d, err := ReadDir(c, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(files); i += 397 {
		c.reset(d.off, d.off+d.len)
		found, err := d.Find([]string{files[i].name}, ListOrder(names(files)))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := readEntry(d, found[files[i].name]); err != nil || !bytes.Equal(got, files[i].data) {
			t.Fatalf("%q: %v, or bytes differ", files[i].name, err)
		}
		if c.inside > 2*window {
			t.Errorf("entry %d: read %d bytes of the directory", i, c.inside)
		}
	}
}

// TestRangesFetch: the target, through transfer.Ranges over HTTP:
// repairing one 100 KB file of a 1 GiB package fetches well under 1 MiB.
func TestRangesFetch(t *testing.T) {
	t.Parallel()
	racetest.SkipLarge(t, "a 1 GiB package")
	const n, size = 10000, 100 << 10
	s, manifest := sparsePackage(t, n, size)
	fetched := fetchOne(t, s, manifest, n/2)
	t.Logf("1 GiB package of %d entries: Find, Open and reading one of %d bytes fetched %d bytes", n, size, fetched)
	if fetched > 512<<10 {
		t.Errorf("fetched %d bytes, more than 512 KiB", fetched)
	}
}

// eofAtEnd says io.EOF with a read that reaches the end, as an
// io.ReaderAt may.
type eofAtEnd struct{ b []byte }

func (r eofAtEnd) ReadAt(p []byte, off int64) (int, error) {
	n, err := bytes.NewReader(r.b).ReadAt(p, off)
	if err == nil && off+int64(n) == int64(len(r.b)) {
		err = io.EOF
	}
	return n, err
}

// TestEOFAtEnd: a reader that says io.EOF with the archive's last bytes
// reads the same.
func TestEOFAtEnd(t *testing.T) {
	t.Parallel()
	data := zipwBytes(t, smallFiles())
	checkAgainst(t, eofAtEnd{data}, int64(len(data)), inOrder, 1)
}

// TestEndWhereArchiveZipFindsIt: an end record followed by bytes that are
// no comment (a writer's zero padding) is found as long as archive/zip
// finds it, in the archive's last 65 KiB, and not further back.
func TestEndWhereArchiveZipFindsIt(t *testing.T) {
	t.Parallel()
	data := zipwBytes(t, smallFiles())
	for _, c := range []struct {
		pad   int
		found bool
	}{{0, true}, {100, true}, {65<<10 - EndLen, true}, {65<<10 - EndLen + 1, false}} {
		padded := append(slices.Clip(data), make([]byte, c.pad)...)
		_, zerr := zip.NewReader(bytes.NewReader(padded), int64(len(padded)))
		e, err := ReadEnd(bytes.NewReader(padded), int64(len(padded)))
		if (err == nil) != c.found || (zerr == nil) != c.found {
			t.Errorf("%d bytes of padding: ReadEnd error %v, archive/zip error %v; want found %v", c.pad, err, zerr, c.found)
			continue
		}
		if c.found && e.Off != int64(len(data)-EndLen) {
			t.Errorf("%d bytes of padding: end record at offset %d, want %d", c.pad, e.Off, len(data)-EndLen)
		}
		if _, err := ReadDir(bytes.NewReader(padded), int64(len(padded))); (err == nil) != c.found {
			t.Errorf("%d bytes of padding: ReadDir error %v, want found %v", c.pad, err, c.found)
		}
	}
}
