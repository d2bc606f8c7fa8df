package metalink

import (
	"encoding/hex"
	"errors"
	"hash"

	"github.com/rsdump/rsdump/internal/digest"
)

// PieceHasher hashes a stream in fixed-length pieces as it is written, so
// that a package can be hashed while it is produced and never re-read.
type PieceHasher struct {
	alg    string
	length int64
	h      hash.Hash
	cur    int64 // bytes in the current, unfinished piece
	total  int64
	hashes []string
	sum    []byte
}

// NewPieceHasher returns a PieceHasher for a supported IANA hash name
// (sha-256 is what RFC 5854 §7.4 requires every processor to support).
func NewPieceHasher(alg string, length int64) (*PieceHasher, error) {
	if length <= 0 {
		return nil, errors.New("metalink: piece length must be positive")
	}
	h, err := NewHash(alg)
	if err != nil {
		return nil, err
	}
	return &PieceHasher{alg: alg, length: length, h: h}, nil
}

// Write hashes b; it never fails.
func (p *PieceHasher) Write(b []byte) (int, error) {
	p.WriteAlong(nil, b)
	return len(b), nil
}

// WriteAlong hashes b into the pieces and into whole too (unless nil):
// when both are sha-256 the two come out of one pass over the data for
// about 1.4 times the cost of one (digest.WriteBoth).
func (p *PieceHasher) WriteAlong(whole hash.Hash, b []byte) {
	n := len(b)
	for len(b) > 0 {
		k := p.length - p.cur
		if int64(len(b)) < k {
			k = int64(len(b))
		}
		if whole != nil {
			digest.WriteBoth(p.h, whole, b[:k])
		} else {
			p.h.Write(b[:k])
		}
		p.cur += k
		b = b[k:]
		if p.cur == p.length {
			p.hashes = append(p.hashes, p.digest())
			p.h.Reset()
			p.cur = 0
		}
	}
	p.total += int64(n)
}

func (p *PieceHasher) digest() string {
	p.sum = p.h.Sum(p.sum[:0])
	return hex.EncodeToString(p.sum)
}

// Size returns the number of bytes written so far.
func (p *PieceHasher) Size() int64 { return p.total }

// Pieces returns the piece hashes of everything written so far, including
// the final short piece; it does not disturb the hasher. An empty stream
// has one piece, the hash of no bytes, because a <pieces> element must
// hold at least one hash (the same rule Validate applies).
func (p *PieceHasher) Pieces() Pieces {
	hs := make([]string, len(p.hashes), len(p.hashes)+1)
	copy(hs, p.hashes)
	if p.cur > 0 || p.total == 0 {
		hs = append(hs, p.digest())
	}
	return Pieces{Type: p.alg, Length: p.length, Hashes: hs}
}

// Piece lengths chosen by DefaultPieceLength.
const (
	MinPieceLength = 256 << 10
	MaxPieceLength = 16 << 20
	targetPieces   = 4096
)

// DefaultPieceLength returns the smallest power of two from 256 KiB up to
// 16 MiB that cuts size into at most 4096 pieces: small enough that a bad
// piece costs little to fetch again, few enough that the document stays
// small. Above 64 GiB the cap wins and there are more pieces.
func DefaultPieceLength(size int64) int64 {
	l := int64(MinPieceLength)
	for l < MaxPieceLength && size > l*targetPieces {
		l <<= 1
	}
	return l
}
