package resourcesync

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEncodeGolden(t *testing.T) {
	t.Parallel()
	h := Header{
		Kind: URLSet,
		MD: MD{
			Capability: CapResourceDumpManifest,
			At:         mustTime(t, "2024-01-02T03:04:05Z"),
			Completed:  mustTime(t, "2024-01-02T03:04:06.5Z"),
		},
		Links: []Link{{Rel: "up", Href: "http://x/capabilitylist.xml"}},
	}
	entries := []URL{
		{
			Loc:     "http://x/a%20b",
			Lastmod: mustTime(t, "2024-01-02T03:04:05Z"),
			MD:      &MD{Hash: "sha-256:abcd", Length: Int64(6), Type: "text/plain", Path: "/resources/a b"},
		},
		{
			Loc:   "http://x/q?a=1&b=<2>",
			MD:    &MD{Change: ChangeDeleted},
			Links: []Link{{Rel: "duplicate", Href: `http://m/"q"`, Pri: 1}},
		},
	}
	want := `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:ln rel="up" href="http://x/capabilitylist.xml"/>
<rs:md capability="resourcedump-manifest" at="2024-01-02T03:04:05Z" completed="2024-01-02T03:04:06.5Z"/>
<url><loc>http://x/a%20b</loc><lastmod>2024-01-02T03:04:05Z</lastmod><rs:md hash="sha-256:abcd" length="6" type="text/plain" path="/resources/a b"/></url>
<url><loc>http://x/q?a=1&amp;b=&lt;2&gt;</loc><rs:md change="deleted"/><rs:ln rel="duplicate" href="http://m/&#34;q&#34;" pri="1"/></url>
</urlset>
`
	got := encodeDoc(t, h, entries...)
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if again := encodeDoc(t, h, entries...); !bytes.Equal(again, got) {
		t.Error("encoding the same document twice gave different bytes")
	}
}

func TestEncodeSitemapIndexGolden(t *testing.T) {
	t.Parallel()
	h := Header{Kind: SitemapIndex, MD: MD{Capability: CapResourceList, At: mustTime(t, "2024-01-02T03:04:05Z")}}
	u := URL{Loc: "http://x/list1.xml", MD: &MD{At: mustTime(t, "2024-01-02T03:04:05Z")}}
	want := `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcelist" at="2024-01-02T03:04:05Z"/>
<sitemap><loc>http://x/list1.xml</loc><rs:md at="2024-01-02T03:04:05Z"/></sitemap>
</sitemapindex>
`
	if got := encodeDoc(t, h, u); string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// fullURL sets every field of an entry, its rs:md and its rs:ln.
func fullURL(t testing.TB) URL {
	return URL{
		Loc:        "http://127.0.0.1/res/1?x=\"a\"&y='b'",
		Lastmod:    mustTime(t, "2024-01-02T03:04:05.25Z"),
		ChangeFreq: "daily",
		MD: &MD{
			Capability: CapResourceList,
			At:         mustTime(t, "2024-01-01T00:00:00Z"),
			Completed:  mustTime(t, "2024-01-01T00:00:01Z"),
			From:       mustTime(t, "2023-12-01T00:00:00Z"),
			Until:      mustTime(t, "2023-12-31T00:00:00Z"),
			Datetime:   mustTime(t, "2023-12-15T12:00:00Z"),
			Change:     ChangeUpdated,
			Hash:       "md5:00ff sha-256:abcd",
			Length:     Int64(1 << 40),
			Type:       "text/plain; charset=utf-8",
			Encoding:   "gzip",
			Path:       "/resources/ünï\tcödé <&> ☃",
			Pieces:     &Pieces{Length: 1 << 20, Hash: "sha-256:abcd"},
		},
		Links: []Link{
			{
				Rel:      "duplicate",
				Href:     "http://127.0.0.21/res/1",
				Pri:      999999,
				Hash:     "sha-256:abcd",
				Length:   Int64(0),
				Modified: mustTime(t, "2024-01-02T03:04:05Z"),
				Type:     "application/octet-stream",
				Encoding: "identity",
				Path:     "/resources/1",
			},
			{Rel: "describedby", Href: "http://127.0.0.1/meta/1"},
		},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, kind := range []Kind{URLSet, SitemapIndex} {
		h := Header{Kind: kind, MD: *fullURL(t).MD, Links: fullURL(t).Links}
		entries := []URL{fullURL(t), {Loc: "http://127.0.0.1/2", MD: &MD{}}, {Loc: "http://127.0.0.1/3"}}
		data := encodeDoc(t, h, entries...)
		gotH, got, err := decodeDoc(data)
		if err != nil {
			t.Fatalf("%v: decode: %v\n%s", kind, err, data)
		}
		if !reflect.DeepEqual(gotH, h) {
			t.Errorf("%v: header\ngot  %+v\nwant %+v", kind, gotH, h)
		}
		if !reflect.DeepEqual(got, entries) {
			t.Errorf("%v: entries\ngot  %+v\nwant %+v", kind, got, entries)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		u    URL
		want string
	}{
		{"no loc", URL{}, "no loc"},
		{"control char in loc", URL{Loc: "http://x/\x01"}, "<loc>: control character"},
		{"invalid utf-8 in path", URL{Loc: "http://x/a", MD: &MD{Path: "/a\xff"}}, "<rs:md> attribute path: invalid UTF-8"},
		{"non-character in href", URL{Loc: "http://x/a", Links: []Link{{Rel: "r", Href: "http://x/\uFFFE"}}}, "<rs:ln> attribute href"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		e, err := NewEncoder(&buf, Header{})
		if err != nil {
			t.Fatal(err)
		}
		before := e.Size()
		err = e.Encode(tt.u)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Encode error = %v, want one containing %q", tt.name, err, tt.want)
		}
		if e.Size() != before || e.Count() != 0 {
			t.Errorf("%s: a failed Encode wrote something", tt.name)
		}
	}
	if _, err := NewEncoder(io.Discard, Header{Kind: Kind(7)}); err == nil {
		t.Error("NewEncoder accepted an unknown kind")
	}
	if _, err := NewEncoder(io.Discard, Header{MD: MD{Capability: "a\x00"}}); err == nil {
		t.Error("NewEncoder accepted a NUL in the header")
	}
}

func TestEncodeEntryLimit(t *testing.T) {
	t.Parallel()
	e, err := NewEncoder(io.Discard, Header{})
	if err != nil {
		t.Fatal(err)
	}
	u := URL{Loc: "http://x/a"}
	for i := 0; i < MaxEntries; i++ {
		if err := e.Encode(u); err != nil {
			t.Fatalf("entry %d: %v", i+1, err)
		}
	}
	if err := e.Encode(u); !errors.Is(err, ErrLimit) {
		t.Fatalf("entry %d: error = %v, want ErrLimit", MaxEntries+1, err)
	}
	if e.Count() != MaxEntries {
		t.Errorf("Count = %d, want %d", e.Count(), MaxEntries)
	}
}

func TestEncodeByteLimit(t *testing.T) {
	t.Parallel()
	e, err := NewEncoder(io.Discard, Header{})
	if err != nil {
		t.Fatal(err)
	}
	big := URL{Loc: "http://x/" + strings.Repeat("a", MaxBytes/4)}
	for i := 0; i < 3; i++ {
		if err := e.Encode(big); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Encode(big); !errors.Is(err, ErrLimit) {
		t.Fatalf("fourth quarter: error = %v, want ErrLimit", err)
	}
	if e.Size() > MaxBytes {
		t.Errorf("Size = %d, above MaxBytes", e.Size())
	}
}

func TestEncoderSizes(t *testing.T) {
	t.Parallel()
	for _, kind := range []Kind{URLSet, SitemapIndex} {
		var buf bytes.Buffer
		e, err := NewEncoder(&buf, Header{Kind: kind, MD: MD{Capability: CapResourceList}})
		if err != nil {
			t.Fatal(err)
		}
		if int(e.Size()) != bytes.Index(encodeDoc(t, Header{Kind: kind, MD: MD{Capability: CapResourceList}}), []byte("</")) {
			t.Errorf("%v: Size after the header = %d", kind, e.Size())
		}
		u := fullURL(t)
		before := e.Size()
		if err := e.Encode(u); err != nil {
			t.Fatal(err)
		}
		if got := int(e.Size() - before); got != e.EntrySize(u) {
			t.Errorf("%v: entry took %d bytes, Encoder.EntrySize = %d", kind, got, e.EntrySize(u))
		}
		if kind == URLSet && EntrySize(u) != e.EntrySize(u) {
			t.Errorf("EntrySize = %d, want %d", EntrySize(u), e.EntrySize(u))
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if int64(buf.Len()) != e.Size() {
			t.Errorf("%v: wrote %d bytes, Size = %d", kind, buf.Len(), e.Size())
		}
		if e.Count() != 1 {
			t.Errorf("%v: Count = %d", kind, e.Count())
		}
	}
}

func TestEncoderClose(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	e, _ := NewEncoder(&buf, Header{})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	n := buf.Len()
	if err := e.Close(); err != nil || buf.Len() != n {
		t.Errorf("second Close: %v, %d more bytes", err, buf.Len()-n)
	}
	if err := e.Encode(URL{Loc: "http://x/a"}); err == nil {
		t.Error("Encode after Close succeeded")
	}
}

type failWriter struct{}

var errDiskFull = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestEncoderWriteError(t *testing.T) {
	t.Parallel()
	e, err := NewEncoder(failWriter{}, Header{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); !errors.Is(err, errDiskFull) {
		t.Errorf("Close = %v, want %v", err, errDiskFull)
	}
}

// TestEscapeMatchesEscapeText checks escape, which copies runs of plain
// bytes whole, against xml.EscapeText on strings with every ASCII byte XML
// can carry and multi-byte characters, at the start, middle and end.
func TestEscapeMatchesEscapeText(t *testing.T) {
	t.Parallel()
	var cases []string
	for c := 0; c < utf8.RuneSelf; c++ {
		if c >= 0x20 || c == '\t' || c == '\n' || c == '\r' {
			s := string(rune(c))
			cases = append(cases, s, s+"ab", "ab"+s, "ab"+s+"cd"+s+s+"é")
		}
	}
	cases = append(cases, "", "plain/path-1.txt", "é", "a€b<𝄞>", "md5:0a sha-256:ff")
	for _, s := range cases {
		var want bytes.Buffer
		xml.EscapeText(&want, []byte(s))
		var x xmlBuf
		x.escape("e", "", s)
		if x.err != nil || string(x.b) != want.String() {
			t.Errorf("escape(%q) = %q, %v; want %q", s, x.b, x.err, want.String())
		}
	}
}

// TestEncodeLine: lines copied from a document give the bytes Encode
// gives for their entries, and count against the same limits.
func TestEncodeLine(t *testing.T) {
	t.Parallel()
	h := Header{MD: MD{Capability: CapResourceList}}
	urls := []URL{fullURL(t), {Loc: "http://x/a&b"}, {Loc: "http://x/c", MD: &MD{Hash: "md5:00"}}}
	want := encodeDoc(t, h, urls...)
	var lines [][]byte
	for _, l := range bytes.SplitAfter(want, []byte("\n")) {
		if bytes.HasPrefix(l, []byte("<url>")) {
			lines = append(lines, l)
		}
	}
	var buf bytes.Buffer
	e, err := NewEncoder(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Encode(urls[0]); err != nil {
		t.Fatal(err)
	}
	for _, l := range lines[1:] {
		if err := e.EncodeLine(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) || e.Count() != len(urls) {
		t.Errorf("with copied lines (%d entries):\n%s\nwant\n%s", e.Count(), buf.Bytes(), want)
	}
	big := append(append([]byte("<url><loc>http://x/"), strings.Repeat("a", MaxBytes/2)...), "</loc></url>\n"...)
	e, _ = NewEncoder(io.Discard, Header{})
	if err := e.EncodeLine(big); err != nil {
		t.Fatal(err)
	}
	if err := e.EncodeLine(big); !errors.Is(err, ErrLimit) || e.Count() != 1 {
		t.Errorf("second half: error %v, count %d; want ErrLimit, 1", err, e.Count())
	}
	for e.Count() < MaxEntries {
		if err := e.EncodeLine(lines[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.EncodeLine(lines[1]); !errors.Is(err, ErrLimit) {
		t.Errorf("entry %d: error %v, want ErrLimit", MaxEntries+1, err)
	}
	e.Close()
	if err := e.EncodeLine(lines[1]); err == nil {
		t.Error("EncodeLine after Close: no error")
	}
}
