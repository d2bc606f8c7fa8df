package transfer

import (
	"context"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rsdump/rsdump/internal/digest"
)

// wholeHash is the whole-file hash, advanced strictly in file order: by a
// worker whose piece is next, straight from its buffer and in the same
// pass as the piece hash (digest.WriteBoth), or else by hashBack, which
// reads a completed piece back from the .part file: in hashFrontier, or
// in a worker whose own piece is ahead (helpFrontier). Either way the
// check is mostly done when the last piece lands.
//
// Pieces finish a little out of order, so a piece just ahead of the
// frontier waits in pending, a bounded number at a time: whoever moves
// the frontier onto it takes it in with the same single pass, instead of
// it being hashed once now and read back and hashed again later.
type wholeHash struct {
	mu       sync.Mutex
	h        hash.Hash // nil when the file has no whole-file hash
	next     int       // pieces [0, next) are in h
	pending  map[int]*pend
	readBack int // pieces hashBack had to read back from the file
	// at is next, for readers that must not wait for mu: mu is held
	// while pieces are hashed, and a held download's reader asks how
	// far the hash is each time it releases bytes (trimHeld).
	at atomic.Int64
}

// advance moves the frontier past the piece just hashed in, or to
// piece n (set). mu is held.
func (w *wholeHash) advance() { w.set(w.next + 1) }

func (w *wholeHash) set(n int) {
	w.next = n
	w.at.Store(int64(n))
}

// pend is a piece waiting for the frontier; done gets its verdict.
type pend struct {
	a    *attempt
	b    []byte
	done chan error
}

// maxBuffered bounds the pieces a worker reads into memory before
// checking and writing them (runBuffered); larger pieces stream into the
// file as they arrive. With the default 16 connections, 2 MiB pieces hold
// at most 32 MiB, plus maxParkedBytes of pieces waiting their turn.
var maxBuffered int64 = 2 << 20 // a variable so tests can take the streaming path

func (d *download) buffered() bool { return d.plen <= maxBuffered }

func (d *download) pieceBuf() *[]byte {
	if d.mem != nil {
		return d.mem.get()
	}
	if bp, ok := d.bufs.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, d.plen)
	return &b
}

// putBuf gives a piece buffer back: to a held download's own free list
// (see held.get), else to the pool.
func (d *download) putBuf(bp *[]byte) {
	if d.mem != nil {
		d.mem.put(bp)
		return
	}
	d.bufs.Put(bp)
}

// runBuffered fetches a piece into memory, checks it and writes it with
// one call. A piece with a hash is checked before it is written, and the
// whole-file hash takes it in the same pass when it is next in line (see
// wholeHash); a piece a little ahead is handed to a goroutine that waits
// for its turn and finishes the attempt (errHandedOff), so the worker goes
// on to the next piece. A range without a hash joins the whole-file hash
// only once it is the copy written, since two copies of it may differ.
func (d *download) runBuffered(a *attempt) error {
	bp := d.pieceBuf()
	off, end := d.span(a.piece)
	b := (*bp)[:end-off]
	if err := d.fetchInto(a, b); err != nil {
		d.putBuf(bp)
		return err
	}
	d.hangUp(a)
	if d.f.Pieces.Hashes == nil {
		err := d.storeRange(a, b)
		d.putBuf(bp)
		return err
	}
	if p := d.enqueue(a, b); p != nil {
		d.waiting.Add(1)
		go func() {
			defer d.waiting.Done()
			err := d.awaitTurn(p)
			if err == nil {
				err = d.storeBuf(a, bp, b)
			} else {
				d.putBuf(bp)
			}
			d.g.parked.Add(-d.plen)
			d.finish(a, err)
		}()
		return errHandedOff
	}
	err := d.verify(a, b)
	if err == nil {
		err = d.storeBuf(a, bp, b)
	} else {
		d.putBuf(bp)
	}
	d.helpFrontier()
	return err
}

// storeBuf stores a verified buffered piece and lets go of its buffer: a
// held download keeps the buffer itself (no copy), until the reader and
// the whole-file hash are both past it.
func (d *download) storeBuf(a *attempt, bp *[]byte, b []byte) error {
	if d.mem == nil {
		err := d.store(a, b)
		d.putBuf(bp)
		return err
	}
	p := &d.pieces[a.piece]
	p.wmu.Lock()
	if p.stored || !d.mem.adopt(a.piece, bp) {
		p.wmu.Unlock()
		d.putBuf(bp)
		return errLost
	}
	p.stored, a.stored = true, true
	p.wmu.Unlock()
	d.trimHeld()
	return nil
}

// helpFrontier hashes one completed piece at the frontier into the
// whole-file hash, as hashFrontier would. Workers call it when the
// frontier is behind them: on a busy machine that one goroutine falls
// behind the many workers, pieces then arrive too far ahead to wait and
// are hashed twice, and the extra work keeps it behind.
func (d *download) helpFrontier() {
	w := &d.whole
	w.mu.Lock()
	i := w.next
	w.mu.Unlock()
	if w.h == nil || i >= d.n {
		return
	}
	d.mu.Lock()
	done := d.pieces[i].done
	d.mu.Unlock()
	if !done {
		return
	}
	bp := d.pieceBuf()
	defer d.putBuf(bp)
	d.hashBack(i, *bp) // an error here is hashFrontier's to report
}

// errHandedOff: the attempt is finished by another goroutine.
var errHandedOff = errors.New("piece handed to a waiting goroutine")

// storeRange writes a range checked by no piece hash, and hashes it into
// the whole-file hash if it is next.
func (d *download) storeRange(a *attempt, b []byte) error {
	if err := d.store(a, b); err != nil {
		return err
	}
	w := &d.whole
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h != nil && w.next == a.piece {
		w.h.Write(b)
		w.advance()
		d.takePending()
	}
	return nil
}

// enqueue makes a piece a little ahead of the frontier wait for it; nil
// when it is next, too far ahead (after a resume, say, or behind a
// stalled piece), or too many wait already.
func (d *download) enqueue(a *attempt, b []byte) *pend {
	w := &d.whole
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h == nil || w.next >= a.piece || a.piece-w.next > maxParkedPieces ||
		len(w.pending) >= maxParkedPieces || w.pending[a.piece] != nil {
		return nil
	}
	if d.g.parked.Add(d.plen) > maxParkedBytes { // across the files being fetched
		d.g.parked.Add(-d.plen)
		return nil
	}
	if w.pending == nil {
		w.pending = map[int]*pend{}
	}
	p := &pend{a: a, b: b, done: make(chan error, 1)}
	w.pending[a.piece] = p
	return p
}

// awaitTurn returns p's verdict once the frontier has taken it in; after
// maxParkWait, or when the attempt ends, p withdraws and is checked alone.
func (d *download) awaitTurn(p *pend) error {
	t := time.NewTimer(maxParkWait)
	defer t.Stop()
	select {
	case err := <-p.done:
		return err
	case <-t.C:
	case <-p.a.ctx.Done():
	}
	w := &d.whole
	w.mu.Lock()
	if w.pending[p.a.piece] != p {
		w.mu.Unlock()
		return <-p.done // taken meanwhile: sent under w.mu, so already there
	}
	delete(w.pending, p.a.piece)
	w.mu.Unlock()
	if err := context.Cause(p.a.ctx); err != nil {
		return err // another copy won, or the download ended
	}
	ph := d.pieceHash()
	ph.Write(p.b)
	return d.checkPiece(p.a, ph)
}

// verify checks b against the piece hash, and takes it into the
// whole-file hash in the same pass when it is next.
func (d *download) verify(a *attempt, b []byte) error {
	w := &d.whole
	w.mu.Lock()
	if w.h != nil && w.next == a.piece {
		defer w.mu.Unlock()
		err := d.take(a, b)
		if err == nil {
			d.takePending()
		}
		return err
	}
	w.mu.Unlock()
	ph := d.pieceHash()
	ph.Write(b)
	return d.checkPiece(a, ph)
}

// take hashes piece a.piece, which is next, into its piece hash and the
// whole-file hash together; a piece that fails leaves the whole-file hash
// as it was. A whole-file hash whose state cannot be saved (blake3) gets
// the piece only once the piece has passed. w.mu is held.
func (d *download) take(a *attempt, b []byte) error {
	w := &d.whole
	ph := d.pieceHash()
	saved, err := saveHash(w.h)
	if err != nil {
		ph.Write(b)
		if err := d.checkPiece(a, ph); err != nil {
			return err
		}
		w.h.Write(b)
		w.advance()
		return nil
	}
	digest.WriteBoth(ph, w.h, b)
	if err := d.checkPiece(a, ph); err != nil {
		w.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(saved) // cannot fail: saveHash checked the type
		return err
	}
	w.advance()
	return nil
}

// saveHash returns h's state, if h can save and restore it.
func saveHash(h hash.Hash) ([]byte, error) {
	m, ok := h.(encoding.BinaryMarshaler)
	if _, ok2 := h.(encoding.BinaryUnmarshaler); !ok || !ok2 {
		return nil, errors.New("hash state cannot be saved")
	}
	return m.MarshalBinary()
}

// takePending takes in the waiting pieces the frontier has reached, in
// order, handing each its verdict. w.mu is held.
func (d *download) takePending() {
	w := &d.whole
	for {
		p := w.pending[w.next]
		if p == nil {
			return
		}
		delete(w.pending, w.next)
		err := d.take(p.a, p.b)
		p.done <- err
		if err != nil {
			return
		}
	}
}

// maxParkWait bounds how long a piece waits for the frontier: a stalled
// piece in front must not hold the ones behind it, unrecorded in the
// state file, for the stall timeout.
const maxParkWait = time.Second

// maxParkedBytes bounds the memory of the pieces that wait, whatever the
// number of files; maxParkedPieces the goroutines holding them, per file.
const (
	maxParkedBytes  = 16 << 20
	maxParkedPieces = 32
)

// hangUp gives back a's connection slots once its body is read, so that
// checking the piece, or waiting to, never holds a connection idle.
func (d *download) hangUp(a *attempt) {
	d.g.budget.release()
	d.g.budget.releaseHost(a.m.host)
	d.mu.Lock()
	a.bodyDone = time.Now()
	a.m.active--
	// The request succeeded, whatever the piece hash will say: the
	// mirror's run of failures ends now, not when the piece's turn comes,
	// or a mirror answering 503 now and then would be backed off for
	// failures "in a row" that successes in waiting separate.
	a.m.fails, a.m.notUntil = 0, time.Time{}
	d.mu.Unlock()
	d.changed.notify()
}

// store writes a buffered piece unless another copy already has; a
// failed write fails the file (after the piece lock is released: see
// writePrimary).
func (d *download) store(a *attempt, b []byte) error {
	p := &d.pieces[a.piece]
	off, _ := d.span(a.piece)
	p.wmu.Lock()
	if p.stored {
		p.wmu.Unlock()
		return errLost
	}
	_, err := d.part.WriteAt(b, off)
	p.stored = err == nil
	p.wmu.Unlock()
	if err != nil {
		return d.failWrite(err)
	}
	a.stored = true
	return nil
}

// hashFrontier hashes, in order, the completed pieces no worker hashed
// into the whole-file hash, reading them back from the file.
func (d *download) hashFrontier() (string, error) {
	w := &d.whole
	if w.h == nil {
		return "", nil
	}
	buf := make([]byte, min(d.plen, max(maxBuffered, 1<<20))) // a piece, or large reads of one
	for {
		w.mu.Lock()
		i := w.next
		w.mu.Unlock()
		if i == d.n {
			break
		}
		if err := d.waitDone(i); err != nil {
			return "", err
		}
		if err := d.hashBack(i, buf); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(w.h.Sum(nil)), nil
}

// hashBack hashes completed piece i from the file, unless a worker got
// there first. A piece that fits the buffer is read before the lock is
// taken, since workers taking their pieces in need that lock; a larger
// one is hashed as it is read.
func (d *download) hashBack(i int, buf []byte) error {
	w := &d.whole
	off, end := d.span(i)
	var b []byte
	if end-off <= int64(len(buf)) {
		b = buf[:end-off]
		if _, err := d.data().ReadAt(b, off); err != nil {
			w.mu.Lock()
			taken := w.next != i // by a worker meanwhile: a held piece is then let go
			w.mu.Unlock()
			if taken {
				return nil
			}
			return fmt.Errorf("%s: %w", d.partPath, err)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next != i {
		return nil
	}
	w.readBack++
	if b != nil {
		w.h.Write(b)
	} else if _, err := io.CopyBuffer(w.h, io.NewSectionReader(d.data(), off, end-off), buf); err != nil {
		return fmt.Errorf("%s: %w", d.partPath, err)
	}
	w.advance()
	d.takePending()
	return nil
}
