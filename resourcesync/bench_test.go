package resourcesync

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"
)

// benchEntries returns a full manifest's worth of typical entries.
func benchEntries() []URL {
	mod := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	entries := make([]URL, MaxEntries)
	for i := range entries {
		entries[i] = URL{
			Loc:     fmt.Sprintf("http://127.0.0.1/resources/dir%03d/file%05d.txt", i%1000, i),
			Lastmod: mod,
			MD: &MD{
				Hash:   "md5:bc8bab22b9fd1a787a5912dcaa84b282 sha-256:decc49645175dd7e2fc16100d92251a3c1c0566468887830f9090563d685e083",
				Length: Int64(int64(i) * 37),
				Type:   "text/plain",
				Path:   fmt.Sprintf("/resources/dir%03d/file%05d.txt", i%1000, i),
			},
		}
	}
	return entries
}

var benchHeader = Header{MD: MD{Capability: CapResourceDumpManifest, At: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}}

func BenchmarkEncode50k(b *testing.B) {
	entries := benchEntries()
	b.ReportAllocs()
	var size int64
	for b.Loop() {
		e, err := NewEncoder(io.Discard, benchHeader)
		if err != nil {
			b.Fatal(err)
		}
		for _, u := range entries {
			if err := e.Encode(u); err != nil {
				b.Fatal(err)
			}
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		size = e.Size()
	}
	b.SetBytes(size)
}

func BenchmarkDecode50k(b *testing.B) {
	data := encodeDoc(b, benchHeader, benchEntries()...)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := NewDecoder(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for ; ; n++ {
			if _, err := d.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		if n != MaxEntries {
			b.Fatalf("decoded %d entries", n)
		}
	}
}
