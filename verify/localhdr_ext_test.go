package verify_test

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io"
	"slices"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/verify"
)

// rewrite copies every entry of z through edit, raw, into a new archive.
func rewrite(t *testing.T, z []byte, edit func(*zip.FileHeader)) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		fh := f.FileHeader
		edit(&fh)
		w, err := zw.CreateRaw(&fh)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := f.OpenRaw()
		io.Copy(w, r)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipErrors(t *testing.T, z []byte) []string {
	t.Helper()
	_, fs := run(t, verify.Options{}, writeFile(t, "p.zip", z))
	return errorsOf(fs)
}

// TestDecoyLocalHeader: b.txt's local header is renamed, and its extra
// field holds a decoy local header with the right name that ends exactly
// where the data begins. Only the header archive/zip itself used counts.
func TestDecoyLocalHeader(t *testing.T) {
	t.Parallel()
	decoy := make([]byte, 30)
	binary.LittleEndian.PutUint32(decoy, 0x04034b50)
	binary.LittleEndian.PutUint16(decoy[6:], 0x8)
	binary.LittleEndian.PutUint16(decoy[26:], uint16(len("resources/b.txt")))
	decoy = append(decoy, "resources/b.txt"...)
	field := binary.LittleEndian.AppendUint16(nil, 0xcafe)
	field = binary.LittleEndian.AppendUint16(field, uint16(len(decoy)))
	field = append(field, decoy...)
	z := rewrite(t, verifytest.Intact(t), func(fh *zip.FileHeader) {
		if fh.Name == "resources/b.txt" {
			fh.Extra = append(slices.Clone(fh.Extra), field...)
		}
	})
	z[bytes.Index(z, []byte("resources/b.txt"))+len("resources/b")] = 'X'
	if got, want := zipErrors(t, z), []string{"zip resources/b.txt"}; !slices.Equal(got, want) {
		t.Errorf("errors %q, want %q", got, want)
	}
}

// TestDirectoryEntryLocalName: a directory entry, never read as a
// bitstream, whose local header names a file.
func TestDirectoryEntryLocalName(t *testing.T) {
	t.Parallel()
	z, _ := verifytest.Package(t, verifytest.BaseFiles)
	zr, _ := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.CreateHeader(&zip.FileHeader{Name: "resources/abc/"})
	for _, f := range zr.File {
		zw.Copy(f)
	}
	zw.Close()
	out := buf.Bytes()
	copy(out[bytes.Index(out, []byte("resources/abc/")):], "resources/x.sh")
	if got, want := zipErrors(t, out), []string{"zip resources/abc/"}; !slices.Equal(got, want) {
		t.Errorf("errors %q, want %q", got, want)
	}
}

// TestLocalHeaderSums: without data descriptors, the local header carries
// the CRC-32, sizes and method, which must agree with the central record.
func TestLocalHeaderSums(t *testing.T) {
	t.Parallel()
	z := rewrite(t, verifytest.Intact(t), func(fh *zip.FileHeader) { fh.Flags &^= 0x8 })
	if got := zipErrors(t, z); len(got) > 0 {
		t.Fatalf("a package without data descriptors: errors %q", got)
	}
	local := bytes.Index(z, []byte("resources/b.txt")) - 30
	for name, flip := range map[string][2]int{"method": {8, 0x01}, "crc": {14, 0x01}, "size": {22, 0x01},
		"descriptor flag": {6, 0x08}, "UTF-8 flag": {7, 0x08}} {
		bad := bytes.Clone(z)
		bad[local+flip[0]] ^= byte(flip[1])
		if got, want := zipErrors(t, bad), []string{"zip resources/b.txt"}; !slices.Equal(got, want) {
			t.Errorf("local %s changed: errors %q, want %q", name, got, want)
		}
	}
}

// TestLocalHeaderZip64Sizes: a local header whose sizes are saturated
// carries them in its ZIP64 field (APPNOTE 4.5.3: only the saturated
// ones, uncompressed first), which must agree with the central record as
// the plain fields do.
func TestLocalHeaderZip64Sizes(t *testing.T) {
	t.Parallel()
	n := uint64(len(verifytest.BaseFiles[1].Data)) // b.txt, stored
	// build gives b.txt a local ZIP64 field holding vals, then sets the
	// local header's fields at the given offsets (18 compressed size, 22
	// size).
	build := func(vals []uint64, set map[int]uint32) []byte {
		field := binary.LittleEndian.AppendUint16(nil, 1)
		field = binary.LittleEndian.AppendUint16(field, uint16(8*len(vals)))
		for _, v := range vals {
			field = binary.LittleEndian.AppendUint64(field, v)
		}
		z := rewrite(t, verifytest.Intact(t), func(fh *zip.FileHeader) {
			fh.Flags &^= 0x8
			if fh.Name == "resources/b.txt" {
				fh.Extra = append(slices.Clone(fh.Extra), field...)
			}
		})
		local := bytes.Index(z, []byte("resources/b.txt")) - 30
		for at, v := range set {
			binary.LittleEndian.PutUint32(z[local+at:], v)
		}
		return z
	}
	const sat = 0xffffffff
	if got := zipErrors(t, build([]uint64{n, n}, map[int]uint32{18: sat, 22: sat})); len(got) > 0 {
		t.Errorf("honest ZIP64 local sizes: errors %q", got)
	}
	for name, z := range map[string][]byte{
		"both saturated, ZIP64 field lies":      build([]uint64{5, 5}, map[int]uint32{18: sat, 22: sat}),
		"compressed saturated, plain size lies": build([]uint64{n}, map[int]uint32{18: sat, 22: 5}),
		"saturated, no ZIP64 field":             build(nil, map[int]uint32{18: sat, 22: sat}),
	} {
		if got, want := zipErrors(t, z), []string{"zip resources/b.txt"}; !slices.Equal(got, want) {
			t.Errorf("%s: errors %q, want %q", name, got, want)
		}
	}
}
