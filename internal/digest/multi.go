package digest

import (
	"encoding/hex"
	"hash"
)

// Multi is an io.Writer that feeds every byte to several hashes at once, so
// a stream is read a single time whatever the number of algorithms.
type Multi struct {
	algs   []string
	hashes []hash.Hash
	n      int64
	pieces *pieces // piece hashes, when SetPieces asked for them
	shaIdx int     // the index of PieceAlg in hashes, -1 without
}

// NewMulti returns a Multi computing algs, in that order. Its sums carry
// the algorithms' canonical names, whatever case algs are given in.
func NewMulti(algs ...string) (*Multi, error) {
	m := &Multi{}
	for _, alg := range algs {
		h, err := New(alg)
		if err != nil {
			return nil, err
		}
		alg, _ = Canonical(alg)
		m.algs = append(m.algs, alg)
		m.hashes = append(m.hashes, h)
	}
	return m, nil
}

// Write never fails: hash.Hash writes cannot return an error.
func (m *Multi) Write(p []byte) (int, error) {
	if m.pieces != nil {
		m.writePieces(p)
	} else {
		for _, h := range m.hashes {
			h.Write(p)
		}
	}
	m.n += int64(len(p))
	return len(p), nil
}

// Algs returns the algorithms computed, by their canonical names, in
// order. The slice is the Multi's own.
func (m *Multi) Algs() []string { return m.algs }

// Len returns the number of bytes written.
func (m *Multi) Len() int64 { return m.n }

// Sums returns the digests of everything written so far.
func (m *Multi) Sums() Set {
	s := make(Set, len(m.hashes))
	for i, h := range m.hashes {
		s[i] = Sum{Alg: m.algs[i], Hex: hex.EncodeToString(h.Sum(nil))}
	}
	return s
}

// Reset clears the hashes and the byte count for reuse.
func (m *Multi) Reset() {
	for _, h := range m.hashes {
		h.Reset()
	}
	m.n = 0
	if p := m.pieces; p != nil {
		p.h.Reset()
		p.in, p.sums = 0, p.sums[:0]
	}
}
