package httpheader

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// What the server formats, the client parses back the same: links with
// every parameter, several per field and several fields, and digests.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	links := []Link{
		{URL: "http://127.0.0.1:8081/dump/resourcedump-00001.zip", Rel: []string{RelDuplicate}, Pri: 2, Geo: "de", Pref: true},
		{URL: "http://127.0.0.1:8082/d%20x/resourcedump-00001.zip", Rel: []string{RelDuplicate}, Pri: 999999},
		{URL: "http://127.0.0.1:8080/dump/resourcedump-00001.zip.meta4", Rel: []string{RelDescribedBy}, Type: "application/metalink4+xml"},
		{URL: "http://127.0.0.1:8080/x", Rel: []string{"duplicate", "describedby"}},
	}
	h := http.Header{}
	for _, l := range links[:2] {
		h.Add("Link", l.String())
	}
	h.Add("Link", links[2].String()+", "+links[3].String())
	got := ParseLinks(h.Values("Link"), "http://127.0.0.1:8080/dump/resourcedump-00001.zip")
	if !reflect.DeepEqual(got, links) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, links)
	}

	sum := sha256.Sum256([]byte("abc"))
	v, err := Digest("SHA-256", hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	if want := "SHA-256=" + base64.StdEncoding.EncodeToString(sum[:]); v != want {
		t.Fatalf("Digest = %q, want %q", v, want)
	}
	if alg, hexSum := ParseDigest([]string{v}); alg != "sha-256" || hexSum != hex.EncodeToString(sum[:]) {
		t.Fatalf("ParseDigest(%q) = %s %s", v, alg, hexSum)
	}
	r, err := ReprDigest("sha-256", hex.EncodeToString(sum[:]))
	if want := "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"; err != nil || r != want {
		t.Fatalf("ReprDigest = %q, %v; want %q", r, err, want)
	}
	if alg, hexSum := ParseDigest([]string{r}); alg != "sha-256" || hexSum != hex.EncodeToString(sum[:]) {
		t.Fatalf("ParseDigest(%q) = %s %s", r, alg, hexSum)
	}
	if v, _ := Digest("sha-1", strings.Repeat("ab", 20)); !strings.HasPrefix(v, "SHA=") {
		t.Errorf("sha-1 formats as %q, want RFC 3230's SHA=", v)
	}
}

func TestDigestRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range [][2]string{{"sha-256", "abc"}, {"sha-256", strings.Repeat("zz", 32)}, {"blake3", strings.Repeat("00", 32)}, {"crc32", "00000000"}} {
		if v, err := Digest(tc[0], tc[1]); err == nil {
			t.Errorf("Digest(%s, %s) = %q, want an error", tc[0], tc[1], v)
		}
	}
}

func TestParseLinks(t *testing.T) {
	t.Parallel()
	ls := ParseLinks([]string{`<http://a/x>; rel=duplicate; pri=1; pref, <ftp://b/x>; rel=duplicate`, `</y.meta4>; rel="describedby"; type="application/metalink4+xml"`, `<http://c/, x>; rel=duplicate`}, "http://o/dir/x")
	if len(ls) != 3 || !ls[0].Pref || ls[0].Pri != 1 || ls[1].URL != "http://o/y.meta4" || ls[1].Type != "application/metalink4+xml" || !ls[1].Has(RelDescribedBy) {
		t.Fatalf("%+v", ls)
	}
	if ls[2].URL != "http://c/,%20x" && ls[2].URL != "http://c/, x" {
		t.Errorf("comma inside <> split the link: %+v", ls[2])
	}
}

func TestParseDigest(t *testing.T) {
	t.Parallel()
	alg, v := ParseDigest([]string{"MD5=abc, SHA-256=" + base64.StdEncoding.EncodeToString(make([]byte, 32))})
	if alg != "sha-256" || v != strings.Repeat("0", 64) {
		t.Fatalf("digest %s %s", alg, v)
	}
	alg, v = ParseDigest([]string{"sha-512=:" + base64.StdEncoding.EncodeToString(make([]byte, 64)) + ":"})
	if alg != "sha-512" || v != strings.Repeat("0", 128) {
		t.Fatalf("repr-digest %s %s", alg, v)
	}
}

// The strongest digest given is kept, names in any case; one of the wrong
// length is ignored.
func TestParseDigestStrongest(t *testing.T) {
	t.Parallel()
	data := []byte("abc")
	s256, s384 := sha256.Sum256(data), sha512.Sum384(data)
	b64 := base64.StdEncoding.EncodeToString
	alg, v := ParseDigest([]string{"SHA-256=" + b64(s256[:]) + ", sha-384=:" + b64(s384[:]) + ":", "UNIXsum=12"})
	if alg != "sha-384" || v != hex.EncodeToString(s384[:]) {
		t.Errorf("ParseDigest = %s %s, want sha-384", alg, v)
	}
	if alg, _ := ParseDigest([]string{"sha-512=AAAA"}); alg != "" {
		t.Errorf("a sha-512 digest of 3 bytes accepted as %s", alg)
	}
}
