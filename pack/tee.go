package pack

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"hash"
	"os"
	"sync"

	"github.com/rsdump/rsdump/internal/digest"
)

// tee writes a package to its file while computing the package's sha-256
// and, for Metalink, the sha-256 of each fixed-length piece: the package
// is never read back. Its state can be saved and restored, so an entry can
// be cut off the end of the package (see zipw.Writer.Rollback).
type tee struct {
	f      *os.File
	whole  hash.Hash
	pieces *pieceHasher // nil unless Metalink is written
	n      int64
	dirty  int64 // bytes written since writeback was last started
	lane   *lane
	once   sync.Once
}

// writebackEvery is how often the kernel is asked to start writing.
const writebackEvery = 32 << 20

func newTee(f *os.File, pieceLen int64) *tee {
	t := &tee{f: f, whole: sha256.New()}
	if pieceLen <= 0 {
		t.lane = startLane(func(b []byte) { t.whole.Write(b) })
		return t
	}
	// One lane feeds both hashes: digest.WriteBoth hashes the same blocks
	// into the package's state and the piece's for about 1.4 times the
	// cost of one hash, where hashing twice costs twice.
	t.pieces = &pieceHasher{length: pieceLen, h: sha256.New(), whole: t.whole}
	t.lane = startLane(t.pieces.write)
	return t
}

func (t *tee) Write(p []byte) (int, error) {
	n, err := t.f.Write(p)
	t.lane.feed(p[:n])
	t.n += int64(n)
	if t.dirty += int64(n); t.dirty >= writebackEvery {
		startWriteback(t.f, t.n-t.dirty, t.dirty)
		t.dirty = 0
	}
	return n, err
}

// sync waits until the hashes have caught up with the writes.
func (t *tee) sync() {
	t.lane.wait()
}

// close stops the hash goroutines; the hashes keep their state.
func (t *tee) close() {
	t.once.Do(func() {
		t.lane.stop()
	})
}

func (t *tee) sum() string {
	t.sync()
	return hex.EncodeToString(t.whole.Sum(nil))
}

type teeState struct {
	n      int64
	whole  []byte
	pieces pieceState
}

func (t *tee) save() (teeState, error) {
	t.sync()
	b, err := t.whole.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return teeState{}, err
	}
	s := teeState{n: t.n, whole: b}
	if t.pieces != nil {
		s.pieces, err = t.pieces.save()
	}
	return s, err
}

// restore truncates the file back to the saved length and rewinds the
// hashes to match it.
func (t *tee) restore(s teeState) error {
	if err := t.f.Truncate(s.n); err != nil {
		return err
	}
	if _, err := t.f.Seek(s.n, 0); err != nil {
		return err
	}
	t.sync()
	if err := t.whole.(encoding.BinaryUnmarshaler).UnmarshalBinary(s.whole); err != nil {
		return err
	}
	t.n, t.dirty = s.n, 0
	if t.pieces != nil {
		return t.pieces.restore(s.pieces)
	}
	return nil
}

// pieceHasher hashes a stream in fixed-length pieces, and the whole
// stream into whole.
type pieceHasher struct {
	length int64
	h      hash.Hash
	whole  hash.Hash
	inCur  int64
	sums   []string
}

func (p *pieceHasher) write(b []byte) {
	for len(b) > 0 {
		k := min(int64(len(b)), p.length-p.inCur)
		digest.WriteBoth(p.h, p.whole, b[:k])
		p.inCur += k
		b = b[k:]
		if p.inCur == p.length {
			p.sums = append(p.sums, hex.EncodeToString(p.h.Sum(nil)))
			p.h.Reset()
			p.inCur = 0
		}
	}
}

// finish returns every piece hash, the last short piece included.
func (p *pieceHasher) finish() []string {
	if p.inCur > 0 {
		p.sums = append(p.sums, hex.EncodeToString(p.h.Sum(nil)))
		p.h.Reset()
		p.inCur = 0
	}
	return p.sums
}

type pieceState struct {
	count int
	inCur int64
	h     []byte
}

func (p *pieceHasher) save() (pieceState, error) {
	b, err := p.h.(encoding.BinaryMarshaler).MarshalBinary()
	return pieceState{count: len(p.sums), inCur: p.inCur, h: b}, err
}

func (p *pieceHasher) restore(s pieceState) error {
	p.sums, p.inCur = p.sums[:s.count], s.inCur
	return p.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(s.h)
}
