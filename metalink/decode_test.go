package metalink

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/racetest"
)

func decodeString(t *testing.T, doc string) (*Metalink, []finding.Finding, error) {
	t.Helper()
	return Decode(strings.NewReader(doc))
}

// v4 wraps file content in a Metalink 4 document.
func v4(fileBody string) string {
	return `<metalink xmlns="` + Namespace + `"><file name="f">` + fileBody + `</file></metalink>`
}

func TestDecodeByNamespaceURI(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "prefixed-v4.meta4"))
	if err != nil {
		t.Fatal(err)
	}
	m, ps, err := Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Decode: %v (%v)", err, ps)
	}
	want := []File{{
		Name:   "example.ext",
		Size:   ptr(int64(14471447)),
		Hashes: []Hash{{"sha-256", "17bfc4a6058d2d7d82db859c8b0528c6ab48d832fed620ed49fb3385dbf1684d"}},
		URLs:   []URL{{URL: "ftp://127.0.0.34/example.ext", Location: "de", Priority: 1}},
		Extensions: []Extension{
			{Name: xml.Name{Space: "urn:example:other", Local: "url"}, Text: "http://decoy.example/not-a-mirror"},
			{Name: xml.Name{Local: "url"}, Text: "http://decoy.example/no-namespace"},
		},
	}}
	if !reflect.DeepEqual(m.Files, want) {
		t.Errorf("files\n got %+v\nwant %+v", m.Files, want)
	}
	if want := time.Date(2009, 5, 15, 2, 53, 23, 0, time.UTC); !m.Published.Equal(want) || m.Published.Location() != time.UTC {
		t.Errorf("published %v, want %v in UTC", m.Published, want)
	}
}

func TestDecodeRefusesOtherRoots(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"no namespace":     `<metalink><file name="a"><url>http://x/</url></file></metalink>`,
		"other namespace":  `<metalink xmlns="urn:example"><file name="a"/></metalink>`,
		"prefix only":      `<metalink:metalink xmlns:metalink="urn:example"/>`,
		"other root":       `<file xmlns="` + Namespace + `" name="a"/>`,
		"v3 namespace v4?": `<metalink4 xmlns="` + NamespaceV3 + `"/>`,
	} {
		_, _, err := decodeString(t, doc)
		var p *finding.Finding
		if !asProblem(err, &p) || p.Code != CodeNotMetalink || !errors.Is(err, ErrNotMetalink) {
			t.Errorf("%s: err %v, want %s", name, err, CodeNotMetalink)
		}
	}
}

// A file element in no namespace is foreign markup, not a file.
func TestDecodeUnqualifiedFileIsForeign(t *testing.T) {
	t.Parallel()
	m, ps, _ := decodeString(t, `<metalink xmlns="`+Namespace+`"><file xmlns="" name="x"><url>http://x/</url></file></metalink>`)
	if len(m.Files) != 0 || len(m.Extensions) != 1 || !hasCode(ps, CodeNoFiles) {
		t.Errorf("files %v, extensions %v, problems %v", m.Files, m.Extensions, ps)
	}
}

func TestDecodeFatal(t *testing.T) {
	t.Parallel()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tt := range []struct {
		name, doc, code string
	}{
		{"empty", "", CodeSyntax},
		{"only a comment", "<!-- x -->", CodeSyntax},
		{"truncated", read("truncated-v4.meta4"), CodeSyntax},
		{"invalid utf-8", read("bad-utf8.meta4"), CodeSyntax},
		{"second root", v4(`<url>http://x/</url>`) + `<metalink/>`, CodeSyntax},
		{"text after root", v4(`<url>http://x/</url>`) + `junk`, CodeSyntax},
		{"text before root", `junk` + v4(``), CodeSyntax},
		{"repeated attribute", v4(`<url priority="1" priority="2">http://x/</url>`), CodeSyntax},
		{"mismatched tags", v4(`<url>http://x/</size>`), CodeSyntax},
		{"latin-1", `<?xml version="1.0" encoding="ISO-8859-1"?>` + v4(``), CodeSyntax},
		{"entity", `<!DOCTYPE metalink [<!ENTITY x "y">]>` + v4(`<url>&x;</url>`), CodeSyntax},
	} {
		m, _, err := decodeString(t, tt.doc)
		var p *finding.Finding
		if m != nil || !asProblem(err, &p) || p.Code != tt.code {
			t.Errorf("%s: m=%v err=%v, want %s", tt.name, m != nil, err, tt.code)
		}
	}
	_, _, err := Decode(iotest.ErrReader(io.ErrClosedPipe))
	var p *finding.Finding
	if !asProblem(err, &p) || p.Code != CodeRead || !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("read error: %v", err)
	}
}

// TestDecodeRepairs covers what the decoder reads leniently and reports.
func TestDecodeRepairs(t *testing.T) {
	t.Parallel()
	u := `<url>http://x.example/f</url>`
	for _, tt := range []struct {
		name  string
		doc   string
		code  string
		sev   finding.Severity
		check func(*Metalink) bool
	}{
		{"size whitespace", v4("<size> 42\n</size>" + u), CodeWhitespace, finding.Warning,
			func(m *Metalink) bool { return *m.Files[0].Size == 42 }},
		{"size not a number", v4("<size>4 2</size>" + u), CodeSizeInvalid, finding.Error,
			func(m *Metalink) bool { return m.Files[0].Size == nil }},
		{"size too big", v4("<size>9223372036854775808</size>" + u), CodeSizeInvalid, finding.Error, nil},
		{"two sizes", v4("<size>1</size><size>2</size>" + u), CodeSizeDuplicate, finding.Error,
			func(m *Metalink) bool { return *m.Files[0].Size == 1 }},
		{"two descriptions", v4("<description>a</description><description>b</description>" + u), CodeDuplicate, finding.Warning,
			func(m *Metalink) bool { return m.Files[0].Description == "a" }},
		{"uppercase hash", v4(`<hash type="md5">` + strings.ToUpper(hex32) + `</hash>` + u), CodeHashUppercase, finding.Warning,
			func(m *Metalink) bool { return m.Files[0].Hashes[0].Value == hex32 }},
		{"priority 0", v4(`<url priority="0">http://x.example/f</url>`), CodePriorityInvalid, finding.Warning,
			func(m *Metalink) bool { return m.Files[0].URLs[0].Priority == 0 }},
		{"priority A", v4(`<url priority="A">http://x.example/f</url>`), CodePriorityInvalid, finding.Warning, nil},
		{"location usa", v4(`<url location="usa">http://x.example/f</url>`), CodeLocationInvalid, finding.Warning,
			func(m *Metalink) bool { return m.Files[0].URLs[0].Location == "" }},
		{"foreign attribute", v4(`<url xmlns:e="urn:e" e:priority="7">http://x.example/f</url>`), "", finding.Warning,
			func(m *Metalink) bool { return m.Files[0].URLs[0].Priority == 0 }},
		{"url whitespace", v4("<url>\n  http://x.example/f</url>"), CodeWhitespace, finding.Warning,
			func(m *Metalink) bool { return m.Files[0].URLs[0].URL == "http://x.example/f" }},
		{"description kept verbatim", v4("<description>\n a \n</description>" + u), "", finding.Warning,
			func(m *Metalink) bool { return m.Files[0].Description == "\n a \n" }},
		{"child in a text element", v4(`<description>a<b xmlns="urn:x">c</b>d</description>` + u), CodeTextChildren, finding.Warning,
			func(m *Metalink) bool { return m.Files[0].Description == "ad" }},
		{"unknown metalink element", v4(`<mirror>x</mirror>` + u), CodeUnknownElement, finding.Warning, nil},
		{"unbound prefix", v4(`<x:y>z</x:y>` + u), CodeUnboundPrefix, finding.Warning,
			func(m *Metalink) bool { return len(m.Files[0].Extensions) == 0 }},
		{"piece hash whitespace and case", v4("<size>1</size><pieces type=\"md5\" length=\"4\"><hash>\n " + strings.ToUpper(hex32) + "\n</hash></pieces>" + u),
			CodeWhitespace, finding.Warning, func(m *Metalink) bool { return m.Files[0].Pieces[0].Hashes[0] == hex32 }},
		{"typed piece hash", v4(`<size>1</size><pieces type="md5" length="4"><hash type="md5">` + hex32 + `</hash></pieces>` + u),
			CodePieceHashType, finding.Warning, nil},
		{"conflicting piece hash type", v4(`<size>1</size><pieces type="md5" length="4"><hash type="sha-1">` + hex32 + `</hash></pieces>` + u),
			CodePieceHashType, finding.Error, nil},
		{"pieces length huge", v4(`<size>1</size><pieces type="md5" length="5222222222222222222"><hash>` + hex32 + `</hash></pieces>` + u),
			"", finding.Warning, func(m *Metalink) bool { return m.Files[0].Pieces[0].Length == 5222222222222222222 }},
		{"pieces length overflow", v4(`<pieces type="md5" length="52222222222222222222"><hash>` + hex32 + `</hash></pieces>` + u),
			CodePiecesLength, finding.Error, nil},
		{"signature without mediatype", v4(`<signature>sig</signature>` + u), CodeSignatureMedia, finding.Warning,
			func(m *Metalink) bool { return m.Files[0].Signature == nil }},
		{"publisher child form", v4(`<publisher><name>N</name><url>http://n/</url></publisher>` + u), CodePublisherV3, finding.Warning,
			func(m *Metalink) bool { return *m.Files[0].Publisher == Publisher{"N", "http://n/"} }},
		{"dynamic 1", `<metalink xmlns="` + Namespace + `"><origin dynamic="1">http://o/</origin><file name="f">` + u + `</file></metalink>`,
			CodeOriginDynamic, finding.Warning, func(m *Metalink) bool { return *m.Dynamic }},
		{"date without zone", `<metalink xmlns="` + Namespace + `"><published>2009-05-15T12:23:23</published><file name="f">` + u + `</file></metalink>`,
			CodeDateInvalid, finding.Warning, func(m *Metalink) bool { return m.Published.IsZero() }},
		{"fractional date", `<metalink xmlns="` + Namespace + `"><updated>2010-05-01T12:15:02.25+01:00</updated><file name="f">` + u + `</file></metalink>`,
			"", finding.Warning, func(m *Metalink) bool { return m.Updated.Equal(time.Date(2010, 5, 1, 11, 15, 2, 250e6, time.UTC)) }},
		{"signature on the root", `<metalink xmlns="` + Namespace + `"><Signature xmlns="http://www.w3.org/2000/09/xmldsig#"><SignedInfo/></Signature><file name="f">` + u + `</file></metalink>`,
			"", finding.Warning, func(m *Metalink) bool { return len(m.Extensions) == 1 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, ps, _ := decodeString(t, tt.doc)
			if m == nil {
				t.Fatalf("no document: %v", ps)
			}
			ps = withoutCodes(ps, CodeNoHash, CodeSizeMissing)
			switch {
			case tt.code == "" && len(ps) != 0:
				t.Errorf("want no problems, got %v", ps)
			case tt.code != "" && !hasProblem(ps, tt.code, tt.sev):
				t.Errorf("want %s %s, got %v", tt.sev, tt.code, ps)
			}
			if tt.check != nil && !tt.check(m) {
				t.Errorf("unexpected model %+v", m.Files)
			}
		})
	}
}

func withoutCodes(ps []finding.Finding, codes ...string) []finding.Finding {
	var out []finding.Finding
	for _, p := range ps {
		if !strings.Contains(strings.Join(codes, " "), p.Code) {
			out = append(out, p)
		}
	}
	return out
}

func TestDecodeMetalink3(t *testing.T) {
	t.Parallel()
	m := decodeCorpusFile(t, "aria2--test.xml")
	f := m.Files[1]
	want := File{
		Name: "aria2-0.5.1.tar.bz2", Size: ptr(int64(345689)), Version: "0.5.1",
		Languages: []string{"ja-JP"}, OS: []string{"Linux-m68k"},
		Description: "The high speed download utility",
		Hashes:      []Hash{{"sha-1", "4c255b0ed130f5ea880f0aa061c3da0487e251cc"}, {"md5", "92296e19c406d77d21bda0bb944eac46"}},
		Pieces: []Pieces{{Type: "sha-1", Length: 262144, Hashes: []string{
			"179463a88d79cbf0b1923991708aead914f26142", "fecf8bc9a1647505fe16746f94e97a477597dbf3"}}},
		URLs:      []URL{{URL: "ftp://ftphost/aria2-0.5.1.tar.bz2", Priority: 1}, {URL: "http://httphost/aria2-0.5.1.tar.bz2", Priority: 1}},
		Publisher: &Publisher{Name: "aria2", URL: "http://aria2.sourceforge.net/"},
	}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("file\n got %+v\nwant %+v", f, want)
	}
	if s := m.Files[0].Signature; s == nil || s.MediaType != "application/pgp-signature" || !strings.Contains(s.Value, "BEGIN PGP") {
		t.Errorf("signature %+v", s)
	}
	if mu := m.Files[4].MetaURLs; len(mu) != 1 || mu[0].MediaType != "torrent" || mu[0].Priority != 1 {
		t.Errorf("bittorrent url not mapped to a metaurl: %+v", mu)
	}
	u := decodeCorpusFile(t, "libmetalink--ubuntu-12.04-server-amd64.metalink")
	if !u.Published.Equal(time.Date(2012, 4, 26, 9, 52, 22, 0, time.UTC)) || u.Files[0].Logo == "" || len(u.Files[0].URLs) != 221 || len(u.Files[0].MetaURLs) != 1 {
		t.Errorf("ubuntu: published %v, logo %q, %d urls", u.Published, u.Files[0].Logo, len(u.Files[0].URLs))
	}
	alt := decodeCorpusFile(t, "librepo--metalink_with_alternates.metalink")
	if ext := alt.Files[0].Extensions; len(ext) != 2 || ext[1].Name.Local != "alternates" || len(ext[1].Children) != 1 {
		t.Errorf("MirrorManager extensions not kept: %+v", ext)
	}
}

func TestDecodeMirrorBrainPublisher(t *testing.T) {
	t.Parallel()
	m := decodeCorpusFile(t, "libmetalink--LibO_3.5.4_Win_x86_install_multi.msi.meta4")
	f := m.Files[0]
	if p := f.Publisher; p == nil || p.Name != "The Document Foundation" {
		t.Errorf("publisher %+v", p)
	}
	if p, ok := f.StrongestPieces(); !ok || len(p.Hashes) != 808 || p.Type != "sha-1" {
		t.Errorf("pieces %v %d", ok, len(p.Hashes))
	}
	if h, ok := f.StrongestHash(); !ok || h.Type != "sha-256" {
		t.Errorf("strongest hash %v %v", h, ok)
	}
	if v, ok := f.WholeHash("md5"); !ok || v != "3d434722eebedb5e080001d2e4bd049b" {
		t.Errorf("md5 %q %v", v, ok)
	}
	if _, ok := f.WholeHash("sha-512"); ok {
		t.Error("sha-512 found")
	}
}

func TestDecodeLimits(t *testing.T) {
	t.Parallel()
	files := func(n int) string {
		return `<metalink xmlns="` + Namespace + `">` +
			strings.Repeat(`<file name="f"><url>http://x/</url></file>`, n) + `</metalink>`
	}
	for _, tt := range []struct {
		name string
		doc  string
		lim  Limits
		code string
	}{
		{"files", files(11), Limits{MaxFiles: 10}, CodeLimitFiles},
		{"pieces", v4(`<pieces type="md5" length="1">` + strings.Repeat("<hash>x</hash>", 11) + `</pieces>`),
			Limits{MaxPieceHashes: 10}, CodeLimitPieces},
		{"bytes", files(100), Limits{MaxBytes: 1000}, CodeLimitBytes},
		{"token", v4(`<description>` + strings.Repeat("x", 5000) + `</description>`), Limits{MaxTokenBytes: 4096}, CodeLimitToken},
		{"comment", `<!--` + strings.Repeat("-x", 5000) + `-->` + files(1), Limits{MaxTokenBytes: 4096}, CodeLimitToken},
		{"depth", v4(strings.Repeat(`<a xmlns="urn:a">`, 20) + strings.Repeat(`</a>`, 20)), Limits{MaxDepth: 10}, CodeLimitDepth},
	} {
		m, _, err := DecodeLimits(strings.NewReader(tt.doc), tt.lim)
		var p *finding.Finding
		if m != nil || !asProblem(err, &p) || p.Code != tt.code || !errors.Is(err, ErrLimit) {
			t.Errorf("%s: err %v, want %s", tt.name, err, tt.code)
		}
		if _, _, err := DecodeLimits(strings.NewReader(tt.doc), Limits{}); errors.Is(err, ErrLimit) {
			t.Errorf("%s: default limits refuse it: %v", tt.name, err)
		}
	}
}

// millionPieces is a document with one file of n sha-256 pieces.
func millionPieces(n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<metalink xmlns="%s">
  <file name="big.zip">
    <size>%d</size>
    <pieces length="262144" type="sha-256">
`, Namespace, int64(n)*262144)
	for i := range n {
		fmt.Fprintf(&b, "      <hash>%064x</hash>\n", i)
	}
	b.WriteString("    </pieces>\n    <url>https://x.example/big.zip</url>\n  </file>\n</metalink>\n")
	return b.Bytes()
}

func manyFiles(n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<metalink xmlns="%s">`+"\n", Namespace)
	for i := range n {
		fmt.Fprintf(&b, `<file name="d/f%d"><size>%d</size><hash type="sha-256">%064x</hash>`+
			`<url priority="1">https://x.example/f%d</url></file>`+"\n", i, i, i, i)
	}
	b.WriteString("</metalink>\n")
	return b.Bytes()
}

// allocBytes decodes doc and returns the bytes allocated.
func allocBytes(t *testing.T, doc []byte) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, ps, err := Decode(bytes.NewReader(doc))
	runtime.ReadMemStats(&after)
	if err != nil || len(ps) != 0 || m == nil {
		t.Fatalf("Decode: %v %v", err, ps)
	}
	return after.TotalAlloc - before.TotalAlloc
}

func TestDecodeMillionPieces(t *testing.T) {
	t.Parallel()
	racetest.SkipLarge(t, "an 80 MB document (see BenchmarkDecodeMillionPieces)")
	doc := millionPieces(1_000_000)
	start := time.Now()
	m, ps, err := Decode(bytes.NewReader(doc))
	if err != nil || len(ps) != 0 || len(m.Files[0].Pieces[0].Hashes) != 1_000_000 {
		t.Fatalf("Decode: %v %v", err, ps)
	}
	t.Logf("%d MB, 1,000,000 piece hashes decoded and validated in %v", len(doc)>>20, time.Since(start))
}

// TestDecodeScalesLinearly guards against quadratic behaviour: ten times
// the files must cost about ten times the allocation. Allocation, not
// time: a shared machine's load makes any deadline flaky.
func TestDecodeScalesLinearly(t *testing.T) {
	racetest.SkipLarge(t, "a 100,000-file document")
	small := allocBytes(t, manyFiles(10_000))
	big := allocBytes(t, manyFiles(100_000))
	if ratio := float64(big) / float64(small); ratio > 15 {
		t.Errorf("allocation grew %.1f times for 10 times the files", ratio)
	}
	doc := millionPieces(100_000)
	if a := allocBytes(t, doc); a > 8*uint64(len(doc)) {
		t.Errorf("decoding %d bytes of piece hashes allocated %d bytes", len(doc), a)
	}
}

func BenchmarkDecodeMillionPieces(b *testing.B) {
	doc := millionPieces(1_000_000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Decode(bytes.NewReader(doc)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeMirrorBrain(b *testing.B) {
	doc, err := os.ReadFile(corpusPath(b, "libmetalink--LibO_3.5.4_Win_x86_install_multi.msi.meta4"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Decode(bytes.NewReader(doc)); err != nil {
			b.Fatal(err)
		}
	}
}

func TestScanHex(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s         string
		n         int
		ok, upper bool
	}{
		{"0123456789abcdef", 16, true, false},
		{"0123456789ABCDEF", 16, true, true},
		{"aBc", 3, true, true},
		{"abc", 4, false, false}, // wrong length
		{"abg", 3, false, false},
		{"ab ", 3, false, false},
		{"Ab\xc3\xa9", 4, false, true}, // a non-ASCII letter is not hex
		{"", 0, true, false},
	} {
		if ok, upper := scanHex(c.s, c.n); ok != c.ok || upper != c.upper {
			t.Errorf("scanHex(%q, %d) = %v, %v; want %v, %v", c.s, c.n, ok, upper, c.ok, c.upper)
		}
	}
}
