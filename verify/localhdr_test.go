package verify

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

// TestHeaderOffsetsAgree checks that the local header offsets read from
// the central directory are the ones archive/zip uses: each header leads
// to the entry's data as archive/zip located it.
func TestHeaderOffsetsAgree(t *testing.T) {
	plain := testZip(t, 3, "")
	cases := map[string][]byte{
		"plain":    plain,
		"comment":  testZip(t, 3, "a comment with PK\x05\x06 inside"),
		"prefixed": append(bytes.Repeat([]byte("#!/bin/sh\n"), 100), plain...),
		"zip64":    testZip(t, 0x10000+5, ""), // archive/zip writes ZIP64 end records past 65,535 entries
	}
	for name, z := range cases {
		t.Run(name, func(t *testing.T) {
			ra := bytes.NewReader(z)
			zr, err := zip.NewReader(ra, int64(len(z)))
			if err != nil {
				t.Fatal(err)
			}
			offs, err := headerOffsets(ra, int64(len(z)), len(zr.File))
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range zr.File {
				h := z[offs[i]:]
				if binary.LittleEndian.Uint32(h) != sigLocal {
					t.Fatalf("%s: no local header at %d", f.Name, offs[i])
				}
				n, e := int64(binary.LittleEndian.Uint16(h[26:])), int64(binary.LittleEndian.Uint16(h[28:]))
				if data, _ := f.DataOffset(); offs[i]+localLen+n+e != data || string(h[localLen:localLen+n]) != f.Name {
					t.Fatalf("%s: header at %d names %q and leads to %d, data at %d", f.Name, offs[i], h[localLen:localLen+n], offs[i]+localLen+n+e, data)
				}
			}
		})
	}
}

func testZip(t *testing.T, n int, comment string) []byte {
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

// TestCentralOffsetZip64 reads a header offset past 4 GiB from the ZIP64
// extra field, after the saturated compressed size it also holds.
func TestCentralOffsetZip64(t *testing.T) {
	record := func(extra []byte) *bufio.Reader {
		h := make([]byte, centralLen)
		binary.LittleEndian.PutUint32(h, sigCentral)
		binary.LittleEndian.PutUint32(h[20:], 0xffffffff) // compressed size
		binary.LittleEndian.PutUint32(h[42:], 0xffffffff) // header offset
		binary.LittleEndian.PutUint16(h[28:], 1)
		binary.LittleEndian.PutUint16(h[30:], uint16(len(extra)))
		h = append(append(h, 'x'), extra...)
		return bufio.NewReader(bytes.NewReader(h))
	}
	field := func(id uint16, vals ...uint64) []byte {
		b := binary.LittleEndian.AppendUint16(nil, id)
		b = binary.LittleEndian.AppendUint16(b, uint16(8*len(vals)))
		for _, v := range vals {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		return b
	}
	const want = 5<<30 + 7
	extra := append(field(0x5455, 1), field(1, 6<<30, want)...) // another field first
	if got, err := readCentralOffset(record(extra)); err != nil || got != want {
		t.Errorf("offset %d, %v; want %d", got, err, want)
	}
	if _, err := readCentralOffset(record(field(1, 6<<30))); err == nil {
		t.Error("a ZIP64 field without the offset was accepted")
	}
	if _, err := readCentralOffset(record(nil)); err == nil {
		t.Error("a saturated offset without a ZIP64 field was accepted")
	}
}
