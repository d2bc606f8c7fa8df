package transfer

import (
	"encoding"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"sync"

	"github.com/rsdump/rsdump/internal/digest"
)

// wholeHash is the whole-file hash, advanced strictly in file order: by a
// worker whose piece is next, straight from its buffer and in the same
// pass as the piece hash (digest.WriteBoth), or else by hashFrontier,
// which reads completed pieces back from the .part file. Either way the
// check is mostly done when the last piece lands.
type wholeHash struct {
	mu   sync.Mutex
	h    hash.Hash // nil when the file has no whole-file hash
	next int       // pieces [0, next) are in h
}

// maxBuffered bounds the pieces a worker reads into memory before
// checking and writing them (runBuffered); larger pieces stream into the
// file as they arrive. With the default 16 connections, 2 MiB pieces hold
// at most 32 MiB.
var maxBuffered int64 = 2 << 20 // a variable so tests can take the streaming path

func (d *download) buffered() bool { return d.plen <= maxBuffered }

func (d *download) pieceBuf() *[]byte {
	if bp, ok := d.bufs.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, d.plen)
	return &b
}

// runBuffered fetches a piece into memory, checks it and writes it with
// one call. A piece with a hash is checked before it is written, and the
// whole-file hash takes it in the same pass when it is next in line; a
// range without one joins the whole-file hash only once it is the copy
// written, since two copies of it may differ.
func (d *download) runBuffered(a *attempt) error {
	bp := d.pieceBuf()
	defer d.bufs.Put(bp)
	off, end := d.span(a.piece)
	b := (*bp)[:end-off]
	if err := d.fetchInto(a, b); err != nil {
		return err
	}
	if d.f.Pieces.Hashes == nil {
		if err := d.store(a, b); err != nil {
			return err
		}
		d.whole.mu.Lock()
		if d.whole.h != nil && d.whole.next == a.piece {
			d.whole.h.Write(b)
			d.whole.next++
		}
		d.whole.mu.Unlock()
		return nil
	}
	if err := d.verify(a, b); err != nil {
		return err
	}
	return d.store(a, b)
}

// verify checks b against the piece hash, hashing it into the whole-file
// hash too when it is next; a piece that fails leaves that hash as it was.
func (d *download) verify(a *attempt, b []byte) error {
	ph := d.pieceHash()
	w := &d.whole
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h == nil || w.next != a.piece {
		ph.Write(b)
		return d.checkPiece(a, ph)
	}
	saved, err := w.h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return err // every hash newHash returns can do this
	}
	digest.WriteBoth(ph, w.h, b)
	if err := d.checkPiece(a, ph); err != nil {
		if uerr := w.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(saved); uerr != nil {
			return uerr
		}
		return err
	}
	w.next++
	return nil
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
		d.mu.Lock()
		d.failLocked(fmt.Errorf("%s: %w", d.partPath, err))
		d.mu.Unlock()
		return errLost
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
	buf := make([]byte, 1<<20) // few, large reads
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
// there first.
func (d *download) hashBack(i int, buf []byte) error {
	w := &d.whole
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next != i {
		return nil
	}
	off, end := d.span(i)
	if _, err := io.CopyBuffer(w.h, io.NewSectionReader(d.part, off, end-off), buf); err != nil {
		return fmt.Errorf("%s: %w", d.partPath, err)
	}
	w.next++
	return nil
}
