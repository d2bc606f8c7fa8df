package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
)

// PieceAlg is the algorithm of a bitstream's piece hashes: each piece is
// hashed with it on its own.
const PieceAlg = SHA256

// pieces hashes a stream in pieces of size bytes, each on its own, the
// last one shorter.
type pieces struct {
	size int64
	h    hash.Hash
	in   int64  // bytes of the current piece hashed
	sums []byte // the pieces' digests, one after another
}

// SetPieces makes m hash, from the same writes as its other hashes, the
// pieces of size bytes of what it is written (PieceAlg each; a shorter
// last piece), until the next SetPieces; 0 turns it off. Reset clears
// them. When m computes PieceAlg over the whole stream too, both states
// take each block in one pass (WriteBoth): about 1.4 times one hash, not
// twice.
func (m *Multi) SetPieces(size int64) {
	switch {
	case size <= 0:
		m.pieces = nil
	case m.pieces == nil || m.pieces.size != size:
		m.pieces = &pieces{size: size, h: sha256.New()}
	default:
		m.pieces.h.Reset()
		m.pieces.in, m.pieces.sums = 0, m.pieces.sums[:0]
	}
	m.shaIdx = -1
	for i, alg := range m.algs {
		if alg == PieceAlg {
			m.shaIdx = i
		}
	}
}

// PieceSums returns the hex digests of the pieces written so far, one
// after another, the last (shorter) piece's included; "" when no piece
// hashes are computed, or nothing was written.
func (m *Multi) PieceSums() string {
	p := m.pieces
	if p == nil {
		return ""
	}
	sums := p.sums
	if p.in > 0 {
		sums = p.h.Sum(sums)
	}
	return hex.EncodeToString(sums)
}

// writePieces writes b to the whole-stream hashes and the piece hashes.
func (m *Multi) writePieces(b []byte) {
	for i, h := range m.hashes {
		if i != m.shaIdx {
			h.Write(b)
		}
	}
	p := m.pieces
	for len(b) > 0 {
		n := min(int64(len(b)), p.size-p.in)
		if m.shaIdx >= 0 {
			WriteBoth(m.hashes[m.shaIdx], p.h, b[:n])
		} else {
			p.h.Write(b[:n])
		}
		if p.in += n; p.in == p.size {
			p.sums = p.h.Sum(p.sums)
			p.h.Reset()
			p.in = 0
		}
		b = b[n:]
	}
}

// PieceCount is the number of pieces of size bytes a bitstream of length
// bytes has: none for an empty one.
func PieceCount(length, size int64) int64 {
	if length <= 0 || size <= 0 {
		return 0
	}
	return (length + size - 1) / size
}
