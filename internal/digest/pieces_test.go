package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"testing"
)

// TestPieceSums: the piece hashes a Multi computes are each piece's
// SHA-256, whatever the writes' sizes, with and without sha-256 among its
// whole-stream hashes (then shared through WriteBoth), and its
// whole-stream sums are not changed by them; Reset starts over.
func TestPieceSums(t *testing.T) {
	t.Parallel()
	data := make([]byte, 5<<20+12345)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	const size = 1 << 20
	var want []byte
	for off := 0; off < len(data); off += size {
		s := sha256.Sum256(data[off:min(off+size, len(data))])
		want = append(want, s[:]...)
	}
	plain, _ := NewMulti(MD5, SHA256)
	plain.Write(data)
	for _, algs := range [][]string{{MD5, SHA256}, {MD5}, {SHA256}} {
		for _, chunk := range []int{len(data), size, 4096, 1000, 1 << 20 / 3} {
			m, _ := NewMulti(algs...)
			m.SetPieces(size)
			for round := range 2 {
				for off := 0; off < len(data); off += chunk {
					m.Write(data[off:min(off+chunk, len(data))])
				}
				if got := m.PieceSums(); got != hex.EncodeToString(want) {
					t.Fatalf("%v, writes of %d, round %d: piece sums differ", algs, chunk, round)
				}
				if algs[0] == MD5 && len(algs) == 2 && m.Sums().String() != plain.Sums().String() {
					t.Fatalf("%v, writes of %d: whole sums %s, want %s", algs, chunk, m.Sums(), plain.Sums())
				}
				m.Reset()
			}
		}
	}
	if n := PieceCount(int64(len(data)), size); n != 6 || PieceCount(0, size) != 0 || PieceCount(size, size) != 1 {
		t.Errorf("PieceCount: %d", n)
	}
}

// BenchmarkMultiPieces: a sha-256 Multi written in 1 MiB chunks (pack's
// streamed files), without and with piece hashes of 1 MiB.
func BenchmarkMultiPieces(b *testing.B) {
	chunk := make([]byte, 1<<20)
	for _, pieces := range []int64{0, 1 << 20} {
		b.Run(map[int64]string{0: "whole", 1 << 20: "pieces"}[pieces], func(b *testing.B) {
			m, _ := NewMulti(SHA256)
			m.SetPieces(pieces)
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				m.Write(chunk)
			}
		})
	}
}
