package metalink

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"math/rand/v2"
	"slices"
	"testing"
)

// directPieces computes piece hashes the obvious way, for comparison.
func directPieces(newHash func() hash.Hash, data []byte, length int) []string {
	var out []string
	for off := 0; off < len(data) || off == 0; off += length {
		end := min(off+length, len(data))
		h := newHash()
		h.Write(data[off:end])
		out = append(out, hex.EncodeToString(h.Sum(nil)))
		if end == len(data) {
			break
		}
	}
	return out
}

func TestPieceHasher(t *testing.T) {
	t.Parallel()
	const length = 1024
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 5*length+1)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, size := range []int{0, 1, length - 1, length, length + 1, 3 * length, 3*length + 1, 5*length + 1} {
		for _, chunk := range []int{1, 7, length, 4096} {
			p, err := NewPieceHasher("sha-256", length)
			if err != nil {
				t.Fatal(err)
			}
			for off := 0; off < size; off += chunk {
				if n, err := p.Write(data[off:min(off+chunk, size)]); err != nil || n != min(chunk, size-off) {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			got := p.Pieces()
			want := directPieces(sha256.New, data[:size], length)
			if got.Type != "sha-256" || got.Length != length || !slices.Equal(got.Hashes, want) {
				t.Errorf("size %d chunk %d: got %d hashes %v, want %d", size, chunk, len(got.Hashes), got, len(want))
			}
			if p.Size() != int64(size) {
				t.Errorf("Size() = %d, want %d", p.Size(), size)
			}
			f := File{Name: "x", Size: ptr(int64(size)), Pieces: []Pieces{got}, URLs: []URL{{URL: "https://x.example/x"}}}
			if ps := (&Metalink{Files: []File{f}}).Validate(); hasCode(ps, CodePiecesCount) {
				t.Errorf("size %d: PieceHasher output fails Validate: %v", size, ps)
			}
		}
	}
}

func TestPieceHasherEmptyIsOneHash(t *testing.T) {
	t.Parallel()
	p, _ := NewPieceHasher("sha-256", 262144)
	got := p.Pieces().Hashes
	if len(got) != 1 || got[0] != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("empty stream gives %v, want the sha-256 of no bytes", got)
	}
}

// Pieces must not disturb the hasher, so that progress can be reported.
func TestPieceHasherPiecesMidStream(t *testing.T) {
	t.Parallel()
	data := []byte("0123456789abcdefXYZ")
	p, _ := NewPieceHasher("sha-1", 8)
	p.Write(data[:10])
	mid := p.Pieces()
	p.Write(data[10:])
	if want := directPieces(sha1.New, data[:10], 8); !slices.Equal(mid.Hashes, want) {
		t.Errorf("mid-stream pieces %v, want %v", mid.Hashes, want)
	}
	if got, want := p.Pieces().Hashes, directPieces(sha1.New, data, 8); !slices.Equal(got, want) {
		t.Errorf("final pieces %v, want %v", got, want)
	}
}

func TestNewPieceHasherErrors(t *testing.T) {
	t.Parallel()
	if _, err := NewPieceHasher("sha-256", 0); err == nil {
		t.Error("length 0 accepted")
	}
	if _, err := NewPieceHasher("sha3-256", 1024); err == nil {
		t.Error("unknown algorithm accepted")
	}
	for _, alg := range []string{"md5", "sha-1", "sha-224", "sha-256", "sha-384", "sha-512"} {
		p, err := NewPieceHasher(alg, 16)
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		n, _ := HashHexLen(alg)
		if h := p.Pieces().Hashes[0]; len(h) != n {
			t.Errorf("%s: hash length %d, want %d", alg, len(h), n)
		}
	}
}

func TestDefaultPieceLength(t *testing.T) {
	t.Parallel()
	const KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
	for _, tt := range []struct{ size, want int64 }{
		{-1, 256 * KiB},
		{0, 256 * KiB},
		{1, 256 * KiB},
		{GiB, 256 * KiB},         // exactly 4096 pieces
		{GiB + 1, 512 * KiB},     // one byte more needs 4097
		{2 * GiB, 512 * KiB},     // 4096
		{3 * GiB, 1 * MiB},       // 3072
		{64 * GiB, 16 * MiB},     // 4096 at the cap
		{64*GiB + 1, 16 * MiB},   // the cap wins
		{1 << 40, 16 * MiB},      // 1 TiB: 65536 pieces
		{1<<63 - 1, 16 * MiB},    // no overflow
		{700 * MiB, 256 * KiB},   // 2800 pieces
		{1536 * MiB, 512 * KiB},  // 3072 pieces
		{16*GiB + 1, 8 * MiB},    // 4097 pieces at 4 MiB
		{16 * GiB, 4 * MiB},      // 4096 pieces
		{100 * GiB, 16 * MiB},    // 6400 pieces at the cap
		{5 * GiB / 2, 1 * MiB},   // 2560
		{4 * GiB, 1 * MiB},       // 4096
		{4*GiB + 1, 2 * MiB},     // 4097 at 1 MiB
		{8 * GiB, 2 * MiB},       // 4096
		{32 * GiB, 8 * MiB},      // 4096
		{32*GiB + 1, 16 * MiB},   // 4097 at 8 MiB
		{GiB / 2, 256 * KiB},     // 2048
		{768 * MiB, 256 * KiB},   // 3072
		{MiB, 256 * KiB},         // 4
		{256 * KiB, 256 * KiB},   // 1
		{256*KiB + 1, 256 * KiB}, // 2
	} {
		got := DefaultPieceLength(tt.size)
		if got != tt.want {
			t.Errorf("DefaultPieceLength(%d) = %d, want %d", tt.size, got, tt.want)
		}
		if got&(got-1) != 0 || got < MinPieceLength || got > MaxPieceLength {
			t.Errorf("DefaultPieceLength(%d) = %d is not a power of two in range", tt.size, got)
		}
	}
}
