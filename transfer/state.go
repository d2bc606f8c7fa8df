package transfer

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/atomic"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/flock"
)

// stateFile is NAME.rsdump-state: the identity of what is being
// downloaded and a bitmap of the pieces verified and synced to NAME.part.
// It is a hint, never proof (see resume): only a file without piece
// hashes reads its bitmap back, and its whole-file hash then checks
// every byte.
type stateFile struct {
	Version     int    `json:"version"`
	Size        int64  `json:"size"`
	Hash        string `json:"hash,omitempty"` // alg:hex
	PieceLength int64  `json:"piece_length"`
	PieceType   string `json:"piece_type,omitempty"`
	PiecesSum   string `json:"pieces_sum,omitempty"` // sha-256 of the piece hashes
	Done        []byte `json:"done"`                 // bit i set: piece i verified
	// A held download's checkpoint (version heldVersion): the pieces
	// before Frontier are in the whole-file hash, whose state is HashState.
	Frontier  int    `json:"frontier,omitempty"`
	HashState []byte `json:"hash_state,omitempty"`
}

// The files a download keeps beside NAME until it is published:
// NAME.part, NAME.rsdump-state and, while the state is saved,
// NAME.rsdump-state.tmp.
const (
	partSuffix  = ".part"
	stateSuffix = ".rsdump-state"
	tmpSuffix   = ".tmp"
)

func newHash(alg string) (hash.Hash, error) { return digest.New(alg) }

func (d *download) identity() stateFile {
	s := stateFile{Version: 1, Size: d.f.Size, PieceLength: d.plen, PieceType: d.f.Pieces.Type}
	if d.f.HashAlg != "" {
		s.Hash = d.f.HashAlg + ":" + d.f.Hash
	}
	if d.f.Pieces.Hashes != nil {
		sum := sha256.Sum256([]byte(strings.Join(d.f.Pieces.Hashes, "\n")))
		s.PiecesSum = hex.EncodeToString(sum[:])
	}
	return s
}

func (s stateFile) sameFile(o stateFile) bool {
	return s.Version == o.Version && s.Size == o.Size && s.Hash == o.Hash && s.PieceLength == o.PieceLength &&
		s.PieceType == o.PieceType && s.PiecesSum == o.PiecesSum
}

// alreadyComplete reports whether NAME exists with the right size and
// matches the whole-file hash or, when there is none, every piece hash,
// in which case nothing is fetched. A file with neither is fetched again:
// its size alone says nothing about its bytes. It first refuses a
// download whose paths are symbolic links (see checkLinks).
func (d *download) alreadyComplete() (bool, error) {
	if err := d.checkLinks(); err != nil {
		return false, err
	}
	fi, err := d.root.Stat(d.f.Name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != d.f.Size {
		return false, nil
	}
	switch {
	case d.f.HashAlg != "":
		sum, err := d.hashFile(d.f.Name, d.f.HashAlg)
		if err != nil || sum != d.f.Hash {
			return false, nil
		}
	case d.f.Pieces.Hashes != nil:
		if !d.piecesMatch(d.f.Name) {
			return false, nil
		}
	default:
		return false, nil
	}
	if d.f.Authenticate != nil && !d.authentic(d.f.Name) {
		return false, nil
	}
	d.res.Skipped, d.res.Path = true, d.final
	return true, nil
}

// authentic reports whether the file rel passes the file's Authenticate.
func (d *download) authentic(rel string) bool {
	f, err := d.root.Open(rel)
	if err != nil {
		return false
	}
	defer f.Close()
	return d.f.Authenticate(f) == nil
}

// piecesMatch reports whether the file rel matches every piece hash.
func (d *download) piecesMatch(rel string) bool {
	f, err := d.root.Open(rel)
	if err != nil {
		return false
	}
	defer f.Close()
	h, _ := newHash(d.f.Pieces.Type) // checked in newDownload
	for i := range d.n {
		off, end := d.span(i)
		h.Reset()
		if _, err := io.Copy(h, io.NewSectionReader(f, off, end-off)); err != nil {
			return false
		}
		if hex.EncodeToString(h.Sum(nil)) != d.f.Pieces.Hashes[i] {
			return false
		}
	}
	return true
}

func (d *download) hashFile(rel, alg string) (string, error) {
	f, err := d.root.Open(rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h, err := newHash(alg)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", d.osPath(rel), err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// open creates or reopens NAME.part, inside the root, and recovers the
// verified pieces.
func (d *download) open() error {
	if dir := path.Dir(d.f.Name); dir != "." {
		if err := d.root.MkdirAll(dir, 0o755); err != nil {
			return d.confined(dir, err)
		}
	}
	f, err := d.root.OpenFile(d.relPart(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return d.confined(d.relPart(), err)
	}
	d.part = f
	if err := d.checkLinks(); err != nil { // a link put there since alreadyComplete
		return err
	}
	if err := flock.Try(f, false); err != nil {
		if errors.Is(err, flock.ErrHeld) {
			return fmt.Errorf("%s: another rsdump is downloading this file", f.Name())
		}
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", d.partPath, err)
	}
	if fi.Size() > 0 {
		if err := d.resume(); err != nil {
			return err
		}
	}
	if err := f.Truncate(d.f.Size); err != nil {
		return fmt.Errorf("%s: %w", d.partPath, err)
	}
	if d.f.Size == 0 {
		d.markDone(0)
	}
	return nil
}

// resume recovers what an earlier run left in the .part. The state file
// is a hint, never proof (anyone who can write the directory can write
// it): what it claims is checked in this run, by a local read.
//
//   - With piece hashes, every piece that holds data is hashed again,
//     recorded in the state or not (one finished since the last save, or
//     all of them when the state is missing or stale), and counts only if
//     it matches.
//   - Without them, the ranges the state records are kept and the
//     whole-file hash, which covers every byte, decides at the end.
//   - With no hash at all nothing could check them: the file starts over.
func (d *download) resume() error {
	switch {
	case d.f.Pieces.Hashes != nil:
		return d.rehash()
	case d.whole.h == nil:
		return d.part.Truncate(0)
	}
	st, err := d.loadState()
	if err == nil && st.sameFile(d.identity()) {
		for i := range d.n {
			if i/8 < len(st.Done) && st.Done[i/8]&(1<<(i%8)) != 0 {
				d.markDone(i)
			}
		}
	}
	if d.remaining == d.n {
		return d.part.Truncate(0)
	}
	return nil
}

// rehash checks every piece of the .part that holds data against its
// piece hash. A matching piece at the whole-file hash's frontier is taken
// into that hash in the same pass, so a resumed file is read back once.
func (d *download) rehash() error {
	buf := make([]byte, min(d.plen, 1<<20))
	for i := range d.n {
		off, end := d.span(i)
		if isHole(d.part, off, end) {
			continue
		}
		ok, err := d.rehashPiece(i, buf)
		if err != nil {
			return fmt.Errorf("%s: %w", d.partPath, err)
		}
		if ok {
			d.markDone(i)
		}
	}
	return nil
}

// rehashPiece reports whether piece i of the .part matches its hash. When
// the piece is next for the whole-file hash (and that hash's state can be
// saved, to undo a piece that fails), both hashes take it in one pass.
func (d *download) rehashPiece(i int, buf []byte) (bool, error) {
	w := &d.whole
	w.mu.Lock()
	defer w.mu.Unlock()
	var saved []byte
	if w.h != nil && w.next == i {
		saved, _ = saveHash(w.h)
	}
	ph := d.pieceHash()
	off, end := d.span(i)
	r := io.NewSectionReader(d.part, off, end-off)
	for {
		n, err := io.ReadFull(r, buf)
		if saved != nil {
			digest.WriteBoth(ph, w.h, buf[:n])
		} else {
			ph.Write(buf[:n])
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return false, err
		}
	}
	if hex.EncodeToString(ph.Sum(nil)) != d.f.Pieces.Hashes[i] {
		if saved != nil {
			w.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(saved) // cannot fail: saveHash checked the type
		}
		return false, nil
	}
	if saved != nil {
		w.advance()
	}
	return true, nil
}

// markDone counts piece i as verified, once: the state's bitmap, the
// rehash and open's empty-file case may each name the same piece, and a
// piece counted twice leaves remaining below zero, which never ends.
func (d *download) markDone(i int) {
	if d.pieces[i].done {
		return
	}
	off, end := d.span(i)
	d.pieces[i].done = true
	d.remaining--
	d.res.Resumed += end - off
	d.verifiedBytes(end - off)
}

// verifiedBytes counts n bytes of the file verified, toward the progress too.
func (d *download) verifiedBytes(n int64) {
	d.verified.Add(n)
	d.g.opts.Events(finding.Progress{Bytes: n, Unit: d.f.Name})
}

// loadState reads the state, at most the size one for this file takes.
func (d *download) loadState() (stateFile, error) {
	var s stateFile
	f, err := d.root.Open(d.relState())
	if err != nil {
		return s, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10+int64(d.n)/4))
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

// saver persists the state every SaveInterval while pieces arrive, so a
// crash loses at most that much work.
func (d *download) saver(stop <-chan struct{}) {
	t := time.NewTicker(d.g.opts.SaveInterval)
	defer t.Stop()
	for {
		var piece <-chan struct{}
		if d.held {
			// A checkpoint as each piece lands, not a SaveInterval later:
			// a killed run loses no more than what was in flight. The
			// saves coalesce while one is written.
			piece = d.hashWake.wait()
		}
		select {
		case <-stop:
			return
		case <-piece:
			if err := d.saveCheckpoint(false); err != nil {
				d.mu.Lock()
				d.failLocked(err)
				d.mu.Unlock()
				return
			}
		case <-t.C:
			if err := d.saveState(); err != nil {
				d.mu.Lock()
				d.failLocked(err)
				d.mu.Unlock()
				return
			}
		}
	}
}

// saveState syncs the .part first, so a piece is never recorded before
// its bytes are durable (unless Scratch: a resumed piece is hashed again
// before it counts), then replaces the state file atomically.
func (d *download) saveState() error {
	d.mu.Lock()
	if !d.dirty {
		d.mu.Unlock()
		return nil
	}
	if d.held {
		d.dirty = false
		d.mu.Unlock()
		return d.saveCheckpoint(true)
	}
	st := d.identity()
	st.Done = make([]byte, (d.n+7)/8)
	for i := range d.n {
		if d.pieces[i].done {
			st.Done[i/8] |= 1 << (i % 8)
		}
	}
	d.dirty = false
	d.mu.Unlock()
	if !d.g.opts.Scratch {
		if err := d.part.Sync(); err != nil {
			return fmt.Errorf("%s: %w", d.partPath, err)
		}
	}
	b, _ := json.Marshal(st)
	return d.writeState(b)
}

// writeState saves the state through a fixed temporary name, inside the
// root: the lock on the .part makes it this download's alone.
func (d *download) writeState(b []byte) error {
	rel := d.relState()
	if err := atomic.WriteFileVia(d.root, rel+tmpSuffix, rel, b, 0o644); err != nil {
		return fmt.Errorf("saving state: %w", d.confined(rel, err))
	}
	return nil
}

func (d *download) waitDone(i int) error {
	for {
		ch := d.hashWake.wait()
		d.mu.Lock()
		done := d.pieces[i].done
		d.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-d.ctx.Done():
			return d.ctx.Err()
		}
	}
}
