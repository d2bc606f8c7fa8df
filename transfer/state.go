package transfer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/atomic"
	"github.com/rsdump/rsdump/internal/digest"
)

// stateFile is NAME.rsdump-state: the identity of what is being
// downloaded and a bitmap of the pieces verified and synced to NAME.part.
type stateFile struct {
	Version     int    `json:"version"`
	Size        int64  `json:"size"`
	Hash        string `json:"hash,omitempty"` // alg:hex
	PieceLength int64  `json:"piece_length"`
	PieceType   string `json:"piece_type,omitempty"`
	PiecesSum   string `json:"pieces_sum,omitempty"` // sha-256 of the piece hashes
	Done        []byte `json:"done"`                 // bit i set: piece i verified
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
// its size alone says nothing about its bytes.
func (d *download) alreadyComplete() (bool, error) {
	fi, err := os.Stat(d.final)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != d.f.Size {
		return false, nil
	}
	switch {
	case d.f.HashAlg != "":
		sum, err := hashFile(d.final, d.f.HashAlg)
		if err != nil || sum != d.f.Hash {
			return false, nil
		}
	case d.f.Pieces.Hashes != nil:
		if !d.piecesMatch(d.final) {
			return false, nil
		}
	default:
		return false, nil
	}
	d.res.Skipped, d.res.Path = true, d.final
	return true, nil
}

// piecesMatch reports whether the file at path matches every piece hash.
func (d *download) piecesMatch(path string) bool {
	f, err := os.Open(path)
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

func hashFile(path, alg string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h, err := newHash(alg)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// open creates or reopens NAME.part and recovers the verified pieces.
func (d *download) open() error {
	if err := os.MkdirAll(filepath.Dir(d.final), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(d.partPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	d.part = f
	if err := lockPart(f); err != nil {
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

// resume trusts the state's bitmap when it describes this file; with
// piece hashes it also rehashes the other pieces that hold data (those
// finished since the last save, or all of them when the state is missing
// or stale). Without piece hashes, unrecorded data cannot be trusted.
func (d *download) resume() error {
	st, err := loadState(d.statePath)
	if err == nil && st.sameFile(d.identity()) {
		for i := range d.n {
			if i/8 < len(st.Done) && st.Done[i/8]&(1<<(i%8)) != 0 {
				d.markDone(i)
			}
		}
	}
	if d.f.Pieces.Hashes == nil {
		if d.remaining == d.n {
			return d.part.Truncate(0)
		}
		return nil
	}
	return d.rehash()
}

func (d *download) rehash() error {
	h, _ := newHash(d.f.Pieces.Type)
	for i := range d.n {
		off, end := d.span(i)
		if d.pieces[i].done || isHole(d.part, off, end) {
			continue
		}
		h.Reset()
		if _, err := io.Copy(h, io.NewSectionReader(d.part, off, end-off)); err != nil {
			return fmt.Errorf("%s: %w", d.partPath, err)
		}
		if hex.EncodeToString(h.Sum(nil)) == d.f.Pieces.Hashes[i] {
			d.markDone(i)
		}
	}
	return nil
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
	d.verified.Add(end - off)
}

func loadState(path string) (stateFile, error) {
	var s stateFile
	b, err := os.ReadFile(path)
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
		select {
		case <-stop:
			return
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
// its bytes are durable, then replaces the state file atomically.
func (d *download) saveState() error {
	d.mu.Lock()
	if !d.dirty {
		d.mu.Unlock()
		return nil
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
	if err := d.part.Sync(); err != nil {
		return fmt.Errorf("%s: %w", d.partPath, err)
	}
	b, _ := json.Marshal(st)
	return writeAtomic(d.statePath, b)
}

// writeAtomic saves the state through a fixed temporary name: the lock
// on the .part makes it this download's alone.
func writeAtomic(path string, b []byte) error {
	if err := atomic.WriteFileVia(atomic.OS, path+tmpSuffix, path, b, 0o644); err != nil {
		return fmt.Errorf("saving state: %w", err)
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
