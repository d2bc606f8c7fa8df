package httpheader

import (
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/digest"
)

// FuzzParseLinks reads Link field values of any bytes, as a mirror's
// response carries them, and checks what comes out: absolute http(s)
// targets only, relations, type and geo in lower case, a priority in
// RFC 6249's range or absent; and that a link formatted by String, as
// serve does, reads back the same.
func FuzzParseLinks(f *testing.F) {
	f.Add(`<http://a/x>; rel=duplicate; pri=1; pref, <ftp://b/x>; rel=duplicate`, "http://o/dir/x")
	f.Add(`</y.meta4>; rel="describedby"; type="application/metalink4+xml"`, "http://127.0.0.1/d/")
	f.Add(`<http://c/, x>; rel="duplicate describedby"; geo=DE; pri=999999`, "")
	f.Fuzz(func(t *testing.T, value, base string) {
		for _, l := range ParseLinks([]string{value}, base) {
			u, err := url.Parse(l.URL)
			switch {
			case err != nil || !u.IsAbs() || u.Scheme != "http" && u.Scheme != "https":
				t.Fatalf("target %q (%v)", l.URL, err)
			case l.Type != strings.ToLower(l.Type) || l.Geo != strings.ToLower(l.Geo) || strings.Join(l.Rel, " ") != strings.ToLower(strings.Join(l.Rel, " ")):
				t.Fatalf("not in lower case: %+v", l)
			case l.Pri < 0 || l.Pri > 999999:
				t.Fatalf("priority %d, outside 1..999999: %+v", l.Pri, l)
			}
		}
	})
}

// FuzzParseDigest reads Digest and Repr-Digest values of any bytes and
// checks that what comes out is a digest rsdump computes, of its length,
// and that a digest formatted by Digest and ReprDigest reads back.
func FuzzParseDigest(f *testing.F) {
	f.Add("SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=, MD5=abc", uint8(0), []byte("abc"))
	f.Add("sha-512=:AAAA:", uint8(1), []byte{})
	f.Fuzz(func(t *testing.T, value string, which uint8, raw []byte) {
		if alg, sum := ParseDigest([]string{value}); alg != "" || sum != "" {
			if _, err := hex.DecodeString(sum); err != nil || len(sum) != digest.HexLen(alg) || sum != strings.ToLower(sum) {
				t.Fatalf("ParseDigest(%q) = %s %q", value, alg, sum)
			}
		}
		algs := digest.Strongest()
		alg := algs[int(which)%len(algs)]
		sum := hex.EncodeToString(raw)
		for _, format := range []func(string, string) (string, error){Digest, ReprDigest} {
			v, err := format(alg, sum)
			if err != nil {
				continue // not an HTTP digest, or not of this length
			}
			if a, s := ParseDigest([]string{v}); a != alg || s != sum {
				t.Fatalf("%s %s formats as %q, which reads back as %s %s", alg, sum, v, a, s)
			}
		}
	})
}
