package digest

import (
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// Known-answer vectors for "abc".
var abc = map[string]string{
	MD5:    "900150983cd24fb0d6963f7d28e17f72",
	SHA1:   "a9993e364706816aba3e25717850c26c9cd0d89d",
	SHA224: "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
	SHA384: "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7",
	SHA256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	SHA512: "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
	BLAKE3: "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85",
}

func TestMultiKnownAnswers(t *testing.T) {
	t.Parallel()
	m, err := NewMulti(Names()...)
	if err != nil {
		t.Fatal(err)
	}
	// Two writes check that state carries across calls.
	io.WriteString(m, "a")
	io.WriteString(m, "bc")
	if m.Len() != 3 {
		t.Errorf("Len = %d, want 3", m.Len())
	}
	for _, s := range m.Sums() {
		if s.Hex != abc[s.Alg] {
			t.Errorf("%s(abc) = %s, want %s", s.Alg, s.Hex, abc[s.Alg])
		}
	}
	m.Reset()
	if m.Len() != 0 {
		t.Errorf("Len after Reset = %d", m.Len())
	}
}

// The registry matches names whatever their case and answers the same
// for "SHA-256" as for "sha-256".
func TestRegistryCaseInsensitive(t *testing.T) {
	t.Parallel()
	for _, alg := range Names() {
		up := strings.ToUpper(alg)
		if !Known(up) || HexLen(up) != HexLen(alg) || HexLen(alg) != len(abc[alg]) || Rank(up) != Rank(alg) || Strong(up) != Strong(alg) {
			t.Errorf("%s and %s disagree (HexLen %d %d, Rank %d %d)", alg, up, HexLen(up), HexLen(alg), Rank(up), Rank(alg))
		}
		if c, ok := Canonical(up); !ok || c != alg {
			t.Errorf("Canonical(%s) = %s, %v", up, c, ok)
		}
		h, err := New(up)
		if err != nil {
			t.Fatalf("New(%s): %v", up, err)
		}
		io.WriteString(h, "abc")
		if got := hex.EncodeToString(h.Sum(nil)); got != abc[alg] {
			t.Errorf("New(%s) hashes abc to %s, want %s", up, got, abc[alg])
		}
	}
	if m, err := NewMulti("SHA-256", "Md5"); err != nil || m.Sums().String() != SHA256+":"+emptySHA256+" "+MD5+":"+emptyMD5 {
		t.Errorf("NewMulti(SHA-256, Md5) sums = %v, %v; want canonical names", m.Sums(), err)
	}
	if len(Strongest()) != len(Names()) {
		t.Errorf("Strongest lists %d algorithms, Names %d", len(Strongest()), len(Names()))
	}
}

const (
	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	emptyMD5    = "d41d8cd98f00b204e9800998ecf8427e"
)

func TestSetStrongest(t *testing.T) {
	t.Parallel()
	s, err := Parse("md5:" + abc[MD5] + " SHA-384:" + abc[SHA384] + " sha-256:" + abc[SHA256] + " sha3-512:00")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Strongest(); !ok || got.Alg != SHA384 || got.Hex != abc[SHA384] {
		t.Errorf("Strongest = %v, %v; want sha-384", got, ok)
	}
	if h, ok := s.Get("Sha-384"); !ok || h != abc[SHA384] {
		t.Errorf("Get(Sha-384) = %q, %v", h, ok)
	}
	if _, ok := (Set{{Alg: "sha3-256", Hex: "00"}}).Strongest(); ok {
		t.Error("a set of unknown algorithms has a strongest one")
	}
	if _, err := Parse("sha-256:" + abc[SHA256] + " SHA-256:" + abc[SHA256]); err == nil {
		t.Error("sha-256 and SHA-256 in one attribute accepted")
	}
}

func TestNewUnknown(t *testing.T) {
	t.Parallel()
	if _, err := New("sha-3"); !errors.Is(err, ErrUnknown) {
		t.Errorf("New(sha-3) error = %v, want ErrUnknown", err)
	}
}

func TestParseList(t *testing.T) {
	t.Parallel()
	got, err := ParseList("MD5, sha-256")
	if err != nil || !reflect.DeepEqual(got, []string{MD5, SHA256}) {
		t.Errorf("ParseList = %v, %v", got, err)
	}
	for _, bad := range []string{"", "crc32", "md5,md5", ","} {
		if _, err := ParseList(bad); err == nil {
			t.Errorf("ParseList(%q) accepted", bad)
		}
	}
}

func TestParseAttr(t *testing.T) {
	t.Parallel()
	attr := "md5:" + abc[MD5] + "\n   sha-256:" + abc[SHA256] + " x-foo:abcd"
	s, err := Parse(attr)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{MD5, SHA256, "x-foo"}; !reflect.DeepEqual(s.Algs(), want) {
		t.Errorf("Algs = %v, want %v", s.Algs(), want)
	}
	if u := s.Unknown(); !reflect.DeepEqual(u, []string{"x-foo"}) {
		t.Errorf("Unknown = %v", u)
	}
	if k := s.Known(); !reflect.DeepEqual(k, []string{MD5, SHA256}) {
		t.Errorf("Known = %v", k)
	}
	want := "md5:" + abc[MD5] + " sha-256:" + abc[SHA256] + " x-foo:abcd"
	if s.String() != want {
		t.Errorf("String = %q, want %q", s.String(), want)
	}
}

func TestParseAttrErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"md5":                                  "want alg:hex",
		"md5:":                                 "want alg:hex",
		":abcd":                                "want alg:hex",
		"md5:" + strings.ToUpper(abc[MD5]):     "not lower-case hex",
		"sha-256:zz":                           "not lower-case hex",
		"md5:abcd":                             "has 4 hex digits, want 32",
		"md5:" + abc[MD5] + " md5:" + abc[MD5]: "given twice",
	}
	for in, want := range cases {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) error = %v, want %q", in, err, want)
		}
	}
	if s, err := Parse("  "); err != nil || len(s) != 0 {
		t.Errorf("Parse(blank) = %v, %v", s, err)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	want := Set{{MD5, abc[MD5]}, {SHA256, abc[SHA256]}, {"x-foo", "ab"}, {SHA1, abc[SHA1]}}
	got := Set{{MD5, abc[MD5]}, {SHA256, strings.Repeat("0", 64)}}
	ok, bad, unchecked := Check(want, got)
	if !reflect.DeepEqual(ok, []string{MD5}) {
		t.Errorf("ok = %v", ok)
	}
	if len(bad) != 1 || bad[0].Alg != SHA256 || bad[0].Want != abc[SHA256] {
		t.Errorf("bad = %v", bad)
	}
	if !reflect.DeepEqual(unchecked, []string{"x-foo", SHA1}) {
		t.Errorf("unchecked = %v", unchecked)
	}
}

func BenchmarkMultiSHA256(b *testing.B) {
	buf := make([]byte, 1<<20)
	m, _ := NewMulti(SHA256)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		m.Write(buf)
	}
}
