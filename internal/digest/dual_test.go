package digest

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"math/rand/v2"
	"testing"
)

// TestWriteBoth checks WriteBoth against two separate hashes for random
// data, offsets and write sizes, including states at different offsets
// within a block, which must fall back to plain writes.
func TestWriteBoth(t *testing.T) {
	t.Parallel()
	if !haveDual {
		t.Log("no SHA extensions on this CPU: only the fallback is tested")
	}
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for trial := range 300 {
		headA, headB := r.IntN(200), r.IntN(200)
		if trial%2 == 0 {
			headB = headA + 64*r.IntN(3) // same offset in the block: the dual path
		}
		a, b := sha256.New(), sha256.New()
		wa, wb := sha256.New(), sha256.New()
		a.Write(data[:headA])
		wa.Write(data[:headA])
		b.Write(data[1000 : 1000+headB])
		wb.Write(data[1000 : 1000+headB])
		p := data[2000:]
		for len(p) > 0 {
			n := min(len(p), 1+r.IntN(100_000))
			if r.IntN(4) == 0 {
				n = min(len(p), r.IntN(300))
			}
			WriteBoth(a, b, p[:n])
			wa.Write(p[:n])
			wb.Write(p[:n])
			p = p[n:]
		}
		if !bytes.Equal(a.Sum(nil), wa.Sum(nil)) || !bytes.Equal(b.Sum(nil), wb.Sum(nil)) {
			t.Fatalf("trial %d (heads %d, %d): WriteBoth differs from separate hashes", trial, headA, headB)
		}
	}
}

// TestWriteBothOtherHashes: hashes WriteBoth cannot read are written plainly.
func TestWriteBothOtherHashes(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("rsdump"), 10_000)
	for _, pair := range [][2]func() hash.Hash{
		{sha256.New224, sha256.New},
		{sha512.New, sha256.New},
		{sha256.New, func() hash.Hash { h, _ := New(BLAKE3); return h }},
	} {
		a, b := pair[0](), pair[1]()
		WriteBoth(a, b, data)
		wa, wb := pair[0](), pair[1]()
		wa.Write(data)
		wb.Write(data)
		if !bytes.Equal(a.Sum(nil), wa.Sum(nil)) || !bytes.Equal(b.Sum(nil), wb.Sum(nil)) {
			t.Fatalf("%T/%T: wrong sums", a, b)
		}
	}
}

func TestWriteBothKnownAnswer(t *testing.T) {
	t.Parallel()
	// FIPS 180-4 example: sha-256 of one million 'a'.
	const want = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
	a, b := sha256.New(), sha256.New()
	WriteBoth(a, b, bytes.Repeat([]byte{'a'}, 1_000_000))
	for _, h := range []hash.Hash{a, b} {
		if got := hexSum(h); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
}

func hexSum(h hash.Hash) string {
	const digits = "0123456789abcdef"
	var s []byte
	for _, c := range h.Sum(nil) {
		s = append(s, digits[c>>4], digits[c&15])
	}
	return string(s)
}

// BenchmarkWriteBoth compares one pass over two states with two passes.
func BenchmarkWriteBoth(b *testing.B) {
	data := make([]byte, 1<<20)
	b.Run("one-hash", func(b *testing.B) {
		h := sha256.New()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			h.Write(data)
		}
	})
	b.Run("two-writes", func(b *testing.B) {
		h1, h2 := sha256.New(), sha256.New()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			h1.Write(data)
			h2.Write(data)
		}
	})
	b.Run("WriteBoth", func(b *testing.B) {
		h1, h2 := sha256.New(), sha256.New()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			WriteBoth(h1, h2, data)
		}
	})
}
