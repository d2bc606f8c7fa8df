package pack

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"os"
	"sync"
)

// tee writes a package to its file while computing the package's sha-256
// and, for Metalink, the sha-256 of each fixed-length piece: the package
// is never read back. Its state can be saved and restored, so an entry can
// be cut off the end of the package (see zipw.Writer.Rollback).
type tee struct {
	f      io.Writer // the package's file or upload (internal/sink)
	os     *os.File  // the file itself, when local: for writeback and truncation
	whole  hash.Hash
	lane   *lane      // hashes the package, and the pieces marked dual
	pieces *pieceSums // nil unless Metalink is written
	n      int64
	dirty  int64 // bytes written since writeback was last started
	once   sync.Once
}

// writebackEvery is how often the kernel is asked to start writing.
const writebackEvery = 32 << 20

func newTee(f io.Writer, pieceLen int64) *tee {
	t := &tee{f: f, whole: sha256.New()}
	if of, ok := f.(interface{ File() *os.File }); ok {
		t.os = of.File()
	}
	if pieceLen > 0 {
		t.pieces = newPieceSums(pieceLen)
	}
	t.lane = startLane(t.hashWhole)
	return t
}

func (t *tee) hashWhole(j laneJob) {
	if !j.dual {
		t.whole.Write(j.c.b)
		return
	}
	t.pieces.hashDual(j, t.whole)
}

func (t *tee) Write(p []byte) (int, error) {
	n, err := t.f.Write(p)
	t.feed(p[:n])
	t.n += int64(n)
	if t.dirty += int64(n); t.dirty >= writebackEvery && t.os != nil {
		startWriteback(t.os, t.n-t.dirty, t.dirty)
		t.dirty = 0
	}
	return n, err
}

// feed copies p into chunks for the lanes: the caller's buffer is reused
// as soon as Write returns.
func (t *tee) feed(p []byte) {
	for len(p) > 0 {
		if t.pieces == nil {
			n := min(len(p), laneChunk)
			t.lane.in <- laneJob{c: newChunk(p[:n], 1)}
			p = p[n:]
			continue
		}
		n := t.pieces.feed(p, t.lane)
		p = p[n:]
	}
}

// sync waits until the hashes have caught up with the writes.
func (t *tee) sync() {
	t.lane.wait()
	if t.pieces != nil {
		t.pieces.lane.wait()
	}
}

// close stops the hash goroutines; the hashes keep their state.
func (t *tee) close() {
	t.once.Do(func() {
		t.lane.stop()
		if t.pieces != nil {
			t.pieces.lane.stop()
		}
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
	if err := t.truncate(s.n); err != nil {
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

// truncate cuts the package back to n bytes: a local file anywhere, an
// upload only within the part not yet sent.
func (t *tee) truncate(n int64) error {
	if t.os == nil {
		tr, ok := t.f.(interface{ Truncate(int64) error })
		if !ok {
			return errors.New("the package's output cannot be cut back")
		}
		return tr.Truncate(n)
	}
	if err := t.os.Truncate(n); err != nil {
		return err
	}
	_, err := t.os.Seek(n, 0)
	return err
}
