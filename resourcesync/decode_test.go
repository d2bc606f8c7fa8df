package resourcesync

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
)

func TestDecodePeerFiles(t *testing.T) {
	t.Parallel()
	for _, f := range peerFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			h, entries, err := decodeDoc(data)
			if err != nil {
				t.Fatal(err)
			}
			if h.Kind != URLSet || h.MD.Capability == "" || len(entries) == 0 {
				t.Fatalf("header %+v, %d entries", h, len(entries))
			}
			for i, u := range entries {
				if u.Loc == "" || u.Lastmod.IsZero() || u.MD == nil || u.MD.Length == nil || u.MD.Hash == "" {
					t.Errorf("entry %d incomplete: %+v", i+1, u)
				}
				for _, p := range ValidateEntry(h, i+1, u) {
					if p.Severity == finding.Error {
						t.Errorf("entry %d: %v", i+1, p)
					}
				}
			}
		})
	}
}

// The resync manifest inside the ZIP, checked field by field.
func TestDecodeResyncManifest(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(sharedPath(t, "peers", "resync", "rd-cli"), "resourcedump00000.zip.manifest.xml"))
	if err != nil {
		t.Fatal(err)
	}
	h, entries, err := decodeDoc(data)
	if err != nil {
		t.Fatal(err)
	}
	if h.MD.Capability != CapResourceDumpManifest || !h.MD.At.IsZero() || len(entries) != 8 {
		t.Fatalf("header %+v, %d entries", h, len(entries))
	}
	u := entries[2]
	if u.Loc != "http://example.org/rs/docs/with space ünï cödé ☃.txt" || // the peer's own base URL, never fetched
		u.MD.Path != "docs/with space ünï cödé ☃.txt" || *u.MD.Length != 54 ||
		FormatTime(u.Lastmod) != "2024-01-02T03:04:05Z" {
		t.Errorf("entry 3 = %+v, md %+v", u, *u.MD)
	}
	if got := FormatTime(entries[5].Lastmod); got != "2024-01-02T03:04:05.123457Z" {
		t.Errorf("entry 6 lastmod = %s", got)
	}
	var warned, failed bool
	for _, p := range append(ValidateHeader(h), ValidateEntry(h, 3, u)...) {
		warned = warned || p.Severity == finding.Warning && strings.Contains(p.Msg, "leading slash")
		failed = failed || strings.Contains(p.Msg, "no at")
	}
	if !warned || !failed {
		t.Errorf("validation should warn about the relative path and fail the missing at: %v", append(ValidateHeader(h), ValidateEntry(h, 3, u)...))
	}
}

// Namespaces are matched by URI: any prefix works, and a familiar prefix
// bound to another namespace does not.
func TestDecodeNamespaces(t *testing.T) {
	t.Parallel()
	doc := `<?xml version="1.0"?>
<s:urlset xmlns:s="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:x="http://www.openarchives.org/rs/terms/" xmlns:rs="urn:other">
<x:ln rel="up" href="http://x/cap"/>
<rs:md capability="bogus"/>
<x:md capability="resourcelist" at="2024-01-02T03:04:05Z"/>
<s:url><s:loc> http://x/a </s:loc><rs:md length="9"/><x:md length="5" x:length="7" length2="8"/><s:priority>0.5</s:priority><other xmlns="urn:z"><loc>http://wrong</loc></other></s:url>
</s:urlset>`
	h, entries, err := decodeDoc([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if h.MD.Capability != CapResourceList || len(h.Links) != 1 || h.Links[0].Rel != "up" {
		t.Errorf("header = %+v", h)
	}
	if len(entries) != 1 || entries[0].Loc != "http://x/a" || *entries[0].MD.Length != 5 {
		t.Errorf("entries = %+v", entries)
	}
}

// The header may give rs:md and rs:ln in any order, with unknown elements
// and comments in between.
func TestDecodeHeaderOrder(t *testing.T) {
	t.Parallel()
	for _, header := range []string{
		`<rs:ln rel="up" href="http://x/c"/><rs:md capability="changelist" from="2024-01-01T00:00:00Z"/>`,
		`<rs:md capability="changelist" from="2024-01-01T00:00:00Z"/><!-- c --><foo:bar xmlns:foo="urn:foo"><baz/></foo:bar><rs:ln rel="up" href="http://x/c"/>`,
	} {
		doc := `<urlset xmlns="` + NSSitemap + `" xmlns:rs="` + NSRS + `">` + header + `<url><loc>http://x/a</loc></url></urlset>`
		h, entries, err := decodeDoc([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if h.MD.Capability != CapChangeList || len(h.Links) != 1 || len(entries) != 1 {
			t.Errorf("%s: header %+v, %d entries", header, h, len(entries))
		}
	}
}

// Text split by comments, CDATA and references is joined.
func TestDecodeTextPieces(t *testing.T) {
	t.Parallel()
	doc := `<urlset xmlns="` + NSSitemap + `"><url><loc>
  http://x/<!-- c -->a&amp;<![CDATA[<b>]]>&#x20;c
</loc></url></urlset>`
	_, entries, err := decodeDoc([]byte(doc))
	if err != nil || len(entries) != 1 || entries[0].Loc != "http://x/a&<b> c" {
		t.Errorf("entries %+v, %v", entries, err)
	}
	// One piece, three, none: the usual case has its own path.
	for text, want := range map[string]string{
		" \n http://x/one\t":            "http://x/one",
		" http://x/<!--1-->a<!--2-->b ": "http://x/ab",
		"":                              "",
		"<!-- only a comment -->":       "",
	} {
		doc := `<urlset xmlns="` + NSSitemap + `"><url><loc>` + text + `</loc></url></urlset>`
		_, entries, err := decodeDoc([]byte(doc))
		if err != nil || len(entries) != 1 || entries[0].Loc != want {
			t.Errorf("<loc>%s</loc>: entries %+v, %v; want loc %q", text, entries, err, want)
		}
	}
}

func TestDecodeASCIIProlog(t *testing.T) {
	t.Parallel()
	doc := `<?xml version='1.0' encoding='US-ASCII'?><urlset xmlns="` + NSSitemap + `"><url><loc>http://x/a</loc></url></urlset>`
	if _, entries, err := decodeDoc([]byte(doc)); err != nil || len(entries) != 1 {
		t.Errorf("%d entries, %v", len(entries), err)
	}
}

func TestDecodeEmptyDocument(t *testing.T) {
	t.Parallel()
	d, err := NewDecoder(strings.NewReader(`<sitemapindex xmlns="` + NSSitemap + `"/>` + "\n<!-- end -->\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Header().Kind != SitemapIndex {
		t.Errorf("kind = %v", d.Header().Kind)
	}
	for i := 0; i < 2; i++ {
		if _, err := d.Next(); err != io.EOF {
			t.Errorf("Next = %v, want io.EOF", err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	const root = `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">`
	tests := []struct {
		name string
		doc  string
		want string // error text, line included
	}{
		{"empty input", "", "line 1: no root element"},
		{"text before root", "junk\n" + root, "line 1: text before the root element"},
		{"not xml", "\n\n<urlset", "line 3: malformed XML"},
		{"wrong root", `<?xml version="1.0"?>` + "\n<feed xmlns=\"http://www.w3.org/2005/Atom\"/>", "line 2: root element is <{http://www.w3.org/2005/Atom}feed>, want <urlset> or <sitemapindex>"},
		{"root without namespace", "<urlset/>", "line 1: root element <urlset> is not in the sitemap namespace"},
		{"root in rs namespace", `<rs:urlset xmlns:rs="` + NSRS + `"/>`, "is not in the sitemap namespace"},
		{"unclosed", root + "\n<url><loc>http://x/a</loc></url>\n", "line 3: malformed XML: unexpected EOF"},
		{"mismatched tags", root + "\n<url><loc>http://x/a</lastmod></url></urlset>", "line 2: malformed XML: element <loc> closed by </lastmod>"},
		{"undeclared entity", root + "\n<url><loc>http://x/&nbsp;</loc></url></urlset>", "line 2: malformed XML: invalid character entity &nbsp;"},
		{"bad length", root + "\n\n<url><loc>http://x/a</loc>\n<rs:md length=\"12a\"/></url></urlset>", `line 4: <rs:md> attribute length: "12a" is not an integer`},
		{"plus length", root + "\n<url><loc>http://x/a</loc><rs:md length=\"+1\"/></url></urlset>", `line 2: <rs:md> attribute length: "+1" is not an integer`},
		{"space in length", root + "\n<url><loc>http://x/a</loc><rs:md length=\" 1\"/></url></urlset>", `<rs:md> attribute length: " 1" is not an integer`},
		{"huge length", root + "\n<url><loc>http://x/a</loc><rs:md length=\"99999999999999999999\"/></url></urlset>", `<rs:md> attribute length: "99999999999999999999" is out of range`},
		{"bad at", root + "\n<rs:md capability=\"resourcelist\" at=\"2024-01-02 03:04:05\"/></urlset>", `line 2: <rs:md> attribute at: "2024-01-02 03:04:05" is not a W3C datetime`},
		{"empty at", root + "\n<rs:md at=\"\"/></urlset>", `line 2: <rs:md> attribute at: "" is not a W3C datetime`},
		{"bad lastmod", root + "\n<url><loc>http://x/a</loc>\n<lastmod>2024-01-02T03:04:05</lastmod></url></urlset>", `line 3: <lastmod>: "2024-01-02T03:04:05" is not a W3C datetime`},
		{"bad pri", root + "\n<url><loc>http://x/a</loc><rs:ln rel=\"duplicate\" href=\"http://m/a\" pri=\"high\"/></url></urlset>", `line 2: <rs:ln> attribute pri: "high" is not an integer`},
		{"zero pri", root + "\n<url><loc>http://x/a</loc><rs:ln rel=\"duplicate\" href=\"http://m/a\" pri=\"0\"/></url></urlset>", `line 2: <rs:ln> attribute pri: 0 is not in 1..999999`},
		{"bad modified", root + "\n<rs:ln rel=\"up\" href=\"http://x/\" modified=\"now\"/></urlset>", `line 2: <rs:ln> attribute modified: "now" is not a W3C datetime`},
		{"two header md", root + "\n<rs:md capability=\"a\"/>\n<rs:md capability=\"b\"/></urlset>", "line 3: more than one <rs:md> in the document header"},
		{"two entry md", root + "\n<url><loc>http://x/a</loc><rs:md/>\n<rs:md/></url></urlset>", "line 3: more than one <rs:md> in the entry"},
		{"two locs", root + "\n<url><loc>http://x/a</loc><loc>http://x/b</loc></url></urlset>", "line 2: more than one <loc> in the entry"},
		{"element in loc", root + "\n<url><loc>http://x/<b>a</b></loc></url></urlset>", "line 2: element <{http://www.sitemaps.org/schemas/sitemap/0.9}b> inside <loc>"},
		{"md after entries", root + "\n<url><loc>http://x/a</loc></url>\n<rs:md capability=\"resourcelist\"/></urlset>", "line 3: <rs:md> of the document after its first entry"},
		{"ln after entries", root + "\n<url><loc>http://x/a</loc></url>\n<rs:ln rel=\"up\" href=\"http://x/\"/></urlset>", "line 3: <rs:ln> of the document after its first entry"},
		{"wrong entry kind", root + "\n<sitemap><loc>http://x/a</loc></sitemap></urlset>", "line 2: <sitemap> entry in a <urlset>"},
		{"second root", root + "</urlset>\n<urlset/>", "line 2: element <urlset> after the root element"},
		{"text after root", root + "</urlset>\nx", "line 2: text after the root element"},
		{"deep nesting", root + "\n<url><loc>http://x/a</loc><x:a xmlns:x=\"urn:x\">" + strings.Repeat("<x:a>", 200) + strings.Repeat("</x:a>", 201) + "</url></urlset>", "line 2: elements nested more than 100 deep"},
		{"latin-1", `<?xml version="1.0" encoding="ISO-8859-1"?>` + root, "line 1: xml: opening charset \"ISO-8859-1\": only UTF-8 documents are supported"},
		{"repeated attribute", root + "\n<rs:md capability=\"resourcelist\" at=\"2024\" at=\"2025\"/></urlset>", "line 2: <rs:md> attribute at: repeated"},
	}
	for _, tt := range tests {
		_, _, err := decodeDoc([]byte(tt.doc))
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %q, want it to contain %q", tt.name, err, tt.want)
		}
		var de *DecodeError
		if !errors.As(err, &de) || de.Line < 1 {
			t.Errorf("%s: error %v is not a *DecodeError with a line", tt.name, err)
		}
	}
}

func TestDecodeErrorIsSticky(t *testing.T) {
	t.Parallel()
	doc := `<urlset xmlns="` + NSSitemap + `" xmlns:rs="` + NSRS + `"><url><loc>http://x/a</loc><rs:md length="x"/></url><url><loc>http://x/b</loc></url></urlset>`
	d, err := NewDecoder(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	_, err1 := d.Next()
	_, err2 := d.Next()
	var de *DecodeError
	if err1 == nil || err1 != err2 || !errors.As(err1, &de) || de.Entry != 1 {
		t.Errorf("Next = %v, then %v", err1, err2)
	}
}

func TestDecodeLinkCap(t *testing.T) {
	t.Parallel()
	for _, n := range []int{MaxLinks, MaxLinks + 1} {
		var b strings.Builder
		fmt.Fprintf(&b, `<urlset xmlns="%s" xmlns:rs="%s"><url><loc>http://x/a</loc>`, NSSitemap, NSRS)
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, `<rs:ln rel="duplicate" href="http://m%d/a"/>`, i)
		}
		b.WriteString("</url></urlset>")
		_, entries, err := decodeDoc([]byte(b.String()))
		switch {
		case n <= MaxLinks && (err != nil || len(entries[0].Links) != n):
			t.Errorf("%d links: %v", n, err)
		case n > MaxLinks && (err == nil || !strings.Contains(err.Error(), "more than 1000 <rs:ln>")):
			t.Errorf("%d links: error = %v", n, err)
		}
	}
}

// A single huge entry is refused before it is all in memory.
func TestDecodeEntryTooLarge(t *testing.T) {
	t.Parallel()
	head := `<urlset xmlns="` + NSSitemap + `"><url><loc>http://x/a</loc></url><url><loc>http://x/`
	r := io.MultiReader(strings.NewReader(head), &endless{}, strings.NewReader("</loc></url></urlset>"))
	d, err := NewDecoder(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Next(); err != nil {
		t.Fatal(err)
	}
	_, err = d.Next()
	if !errors.Is(err, errTooLarge) {
		t.Fatalf("Next = %v, want errTooLarge", err)
	}
}

// endless reads as an unlimited run of 'a' bytes.
type endless struct{}

func (*endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// Many entries, each within the budget, add up to more than one budget.
func TestDecodeBudgetIsPerEntry(t *testing.T) {
	t.Parallel()
	u := URL{Loc: "http://x/" + strings.Repeat("a", 1<<20)}
	entries := make([]URL, 12)
	for i := range entries {
		entries[i] = u
	}
	data := encodeDoc(t, Header{}, entries...)
	_, got, err := decodeDoc(data)
	if err != nil || len(got) != len(entries) {
		t.Fatalf("%d entries, %v", len(got), err)
	}
	if !bytes.Contains(data, []byte(u.Loc)) {
		t.Fatal("test document is wrong")
	}
}

func TestEachStopsAtCallbackError(t *testing.T) {
	t.Parallel()
	doc := `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="resourcelist" at="2024-01-01T00:00:00Z"/><url><loc>http://x/a</loc></url><url><loc>http://x/b</loc></url><url><loc>http://x/c</loc></url></urlset>`
	d, err := NewDecoder(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	stop := errors.New("stop")
	err = d.Each(func(u URL) error {
		seen = append(seen, u.Loc)
		if len(seen) == 2 {
			return stop
		}
		return nil
	})
	if err != stop || len(seen) != 2 {
		t.Errorf("Each = %v after %v, want stop after two entries", err, seen)
	}
}
