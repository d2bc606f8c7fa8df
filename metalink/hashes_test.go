package metalink

import (
	"slices"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/digest"
)

// metalink's hash table is digest's registry: every algorithm rsdump
// computes, in any case, strongest first.
func TestHashesFromRegistry(t *testing.T) {
	t.Parallel()
	for _, alg := range digest.Names() {
		n, ok := HashHexLen(strings.ToUpper(alg))
		if !ok || n != digest.HexLen(alg) {
			t.Errorf("HashHexLen(%s) = %d, %v; digest says %d", strings.ToUpper(alg), n, ok, digest.HexLen(alg))
		}
		if _, err := NewHash(strings.ToUpper(alg)); err != nil {
			t.Errorf("NewHash(%s): %v", alg, err)
		}
	}
	size := int64(3)
	f := File{Name: "f", Size: &size, Hashes: []Hash{
		{Type: "md5", Value: strings.Repeat("a", 32)},
		{Type: "sha-256", Value: strings.Repeat("b", 64)},
		{Type: "SHA-384", Value: strings.Repeat("C", 96)},
		{Type: "sha3-512", Value: strings.Repeat("d", 128)},
	}, Pieces: []Pieces{
		{Type: "sha-1", Length: 4, Hashes: []string{strings.Repeat("e", 40)}},
		{Type: "Sha-224", Length: 4, Hashes: []string{strings.Repeat("f", 56)}},
	}}
	if h, ok := f.StrongestHash(); !ok || h.Type != "sha-384" || h.Value != strings.Repeat("c", 96) {
		t.Errorf("StrongestHash = %+v, %v; want sha-384", h, ok)
	}
	if p, ok := f.StrongestPieces(); !ok || p.Type != "sha-224" {
		t.Errorf("StrongestPieces = %+v, %v; want sha-224", p, ok)
	}
	if u := f.UnverifiableHashes(); u != nil {
		t.Errorf("UnverifiableHashes = %v with usable hashes", u)
	}
	g := File{Name: "g", Size: &size, Hashes: []Hash{{Type: "sha3-512", Value: strings.Repeat("d", 128)}},
		Pieces: []Pieces{{Type: "x-whirl", Length: 4, Hashes: []string{"00"}}}}
	if u := g.UnverifiableHashes(); !slices.Equal(u, []string{"sha3-512", "x-whirl"}) {
		t.Errorf("UnverifiableHashes = %v, want [sha3-512 x-whirl]", u)
	}
	if u := (&File{Name: "h", Size: &size}).UnverifiableHashes(); u != nil {
		t.Errorf("UnverifiableHashes of a file without hashes = %v", u)
	}
}
