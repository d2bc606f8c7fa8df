package resourcesync

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rsdump/rsdump/internal/sharedtest"
)

// FuzzDecoder feeds the streaming decoder documents of any bytes, whole
// and in chunks of any size, and checks that it never panics or hangs,
// that how the bytes arrive changes nothing (the same header, entries and
// error), that its errors carry a line, and that whatever it accepts
// survives an encode/decode round trip unchanged.
func FuzzDecoder(f *testing.F) {
	for _, seed := range decoderSeeds(f) {
		f.Add(seed, uint8(0))
		f.Add(seed, uint8(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		h, entries, err := decodeDoc(data)
		h2, entries2, err2 := decodeFrom(&chunkReader{b: data, n: int(chunk) + 1})
		if !reflect.DeepEqual(h, h2) || !reflect.DeepEqual(entries, entries2) || errString(err) != errString(err2) {
			t.Fatalf("read whole: %d entries, error %v; in chunks of %d: %d entries, error %v", len(entries), err, int(chunk)+1, len(entries2), err2)
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Line < 1 {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		checkRoundTrip(t, h, entries)
	})
}

// decoderSeeds are documents of every kind: resync's, the golden
// manifest, and a urlset and a sitemapindex of every field.
func decoderSeeds(f *testing.F) [][]byte {
	var out [][]byte
	files, _ := filepath.Glob(filepath.Join(sharedtest.Dir(), "peers", "resync", "rd-cli", "*.xml"))
	for _, file := range append(files, filepath.Join("..", "testdata", "golden", "example.manifest.xml")) {
		if data, err := os.ReadFile(file); err == nil {
			out = append(out, data)
		}
	}
	full := fullURL(f)
	index := Header{Kind: SitemapIndex, MD: MD{Capability: CapResourceList, At: full.MD.At}}
	return append(out,
		[]byte(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>`),
		[]byte(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="resourcelist" at="2024"/><sitemap><loc>http://x/1.xml</loc></sitemap></sitemapindex>`),
		[]byte(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><url><loc>http://x/a</loc><rs:md length="x"/></url></urlset>`),
		encodeDoc(f, Header{MD: *full.MD, Links: full.Links}, full),
		encodeDoc(f, index, URL{Loc: "http://127.0.0.1/rs/list1.xml", MD: &MD{At: full.MD.At}}, URL{Loc: "http://127.0.0.1/rs/list2.xml", Lastmod: full.Lastmod}),
	)
}

// decodeFrom decodes a whole document from r.
func decodeFrom(r io.Reader) (Header, []URL, error) {
	d, err := NewDecoder(r)
	if err != nil {
		return Header{}, nil, err
	}
	var entries []URL
	err = d.Each(func(u URL) error {
		entries = append(entries, u)
		return nil
	})
	return d.Header(), entries, err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// chunkReader hands b out n bytes at a time at most.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}

// checkRoundTrip encodes a decoded document and decodes it again.
func checkRoundTrip(t *testing.T, h Header, entries []URL) {
	var buf bytes.Buffer
	e, err := NewEncoder(&buf, h)
	if err != nil {
		t.Fatalf("encode header %+v: %v", h, err)
	}
	for _, u := range entries {
		if u.Loc == "" {
			return // decodes, but Encode refuses it by design
		}
		if err := e.Encode(u); err != nil {
			t.Fatalf("encode %+v: %v", u, err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	h2, entries2, err := decodeDoc(buf.Bytes())
	if err != nil {
		t.Fatalf("decoding our own output: %v\n%s", err, buf.Bytes())
	}
	if !reflect.DeepEqual(h, h2) || !reflect.DeepEqual(entries, entries2) {
		t.Fatalf("round trip changed the document\n%+v\n%+v\n%s", entries, entries2, buf.Bytes())
	}
}
