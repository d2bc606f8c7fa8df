package pkgread

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/rsdump/rsdump/internal/ziprange"
)

// TestHeaderOffset checks the local header offsets taken from archive/zip:
// each leads to the entry's data, under the entry's name. It fails if a Go
// release renames archive/zip's field.
func TestHeaderOffset(t *testing.T) {
	plain := testZip(t, 3, "")
	cases := map[string][]byte{
		"plain":    plain,
		"comment":  testZip(t, 3, "a comment with PK\x05\x06 inside"),
		"prefixed": append(bytes.Repeat([]byte("#!/bin/sh\n"), 100), plain...),
		"zip64":    testZip(t, 0x10000+5, ""), // archive/zip writes ZIP64 end records past 65,535 entries
	}
	for name, z := range cases {
		t.Run(name, func(t *testing.T) {
			zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range zr.File {
				off, err := headerOffset(f)
				if err != nil {
					t.Fatal(err)
				}
				h := z[off:]
				n, e := int64(binary.LittleEndian.Uint16(h[26:])), int64(binary.LittleEndian.Uint16(h[28:]))
				if data, _ := f.DataOffset(); binary.LittleEndian.Uint32(h) != ziprange.SigLocal || off+ziprange.LocalLen+n+e != data || string(h[ziprange.LocalLen:ziprange.LocalLen+n]) != f.Name {
					t.Fatalf("%s: header at %d names %q and leads to %d, data at %d", f.Name, off, h[ziprange.LocalLen:ziprange.LocalLen+n], off+ziprange.LocalLen+n+e, data)
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
