package resourcesync

import (
	"strings"
	"testing"
)

// TestPiecesDecode: the piece hashes are read whatever prefix their
// namespace is bound to, a document that binds it on the root as well as
// one that binds it on the <rs:md>; without both attributes, or with a
// length that is not a positive number, there are none (the bitstream is
// taken whole); attributes of another namespace with those names are not
// taken for them.
func TestPiecesDecode(t *testing.T) {
	t.Parallel()
	doc := func(rootNS, md string) []byte {
		return []byte(`<urlset xmlns="` + NSSitemap + `" xmlns:rs="` + NSRS + `"` + rootNS + `>
<rs:md capability="resourcedump-manifest"/>
<url><loc>http://127.0.0.1/a</loc><rs:md hash="sha-256:00" length="3"` + md + `/></url></urlset>`)
	}
	h := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name, root, md string
		want           *Pieces
	}{
		{"ours", "", ` xmlns:pieces="` + NSPieces + `" pieces:length="2" pieces:hash="sha-256:` + h + h + `"`, &Pieces{2, "sha-256:" + h + h}},
		{"other prefix, on the root", ` xmlns:p="` + NSPieces + `"`, ` p:length="2" p:hash="sha-256:` + h + `"`, &Pieces{2, "sha-256:" + h}},
		{"no hash", "", ` xmlns:pieces="` + NSPieces + `" pieces:length="2"`, nil},
		{"zero length", "", ` xmlns:pieces="` + NSPieces + `" pieces:length="0" pieces:hash="sha-256:` + h + `"`, nil},
		{"not a number", "", ` xmlns:pieces="` + NSPieces + `" pieces:length="x" pieces:hash="sha-256:` + h + `"`, nil},
		{"another namespace", "", ` xmlns:pieces="https://example.org/other" pieces:length="2" pieces:hash="sha-256:` + h + `"`, nil},
	} {
		_, urls, err := decodeDoc(doc(c.root, c.md))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := urls[0].MD.Pieces
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("%s: pieces %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestPiecesSums: Sums splits the digests of a bitstream's pieces, and
// refuses a count of digits that does not fit its length, an algorithm
// rsdump does not compute, or digits that are not hex.
func TestPiecesSums(t *testing.T) {
	t.Parallel()
	a, b := strings.Repeat("0a", 32), strings.Repeat("1b", 32)
	alg, sums, err := (&Pieces{Length: 4, Hash: "SHA-256:" + a + b}).Sums(5)
	if err != nil || alg != "sha-256" || len(sums) != 2 || sums[0] != a || sums[1] != b {
		t.Fatalf("%s %v %v", alg, sums, err)
	}
	for _, p := range []Pieces{
		{4, "sha-256:" + a},                // 5 bytes are 2 pieces
		{4, "sha-256:" + a + b + a},        // not 3
		{4, "crc:" + a + b},                // unknown
		{4, "sha-256:" + a + "zz" + b[2:]}, // not hex
		{0, "sha-256:" + a + b},
	} {
		if _, _, err := p.Sums(5); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

// TestPiecesBinary: the binary form of an entry (spools, sorts) keeps its
// piece hashes.
func TestPiecesBinary(t *testing.T) {
	t.Parallel()
	u := fullURL(t)
	b, err := u.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got URL
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if got.MD.Pieces == nil || *got.MD.Pieces != *u.MD.Pieces {
		t.Errorf("pieces %+v, want %+v", got.MD.Pieces, u.MD.Pieces)
	}
}
