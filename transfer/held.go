package transfer

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// A held download (StreamHeld) keeps its verified pieces in memory, not
// in a .part: the reader takes them from there, says what it no longer
// needs (Release), and the engine fetches no further ahead of it than a
// window. The package a sync streams is so never written to the disk and
// read back, and never takes the disk space of a second copy.
//
// Its resume record is a checkpoint: how far the whole-file hash has got
// and that hash's saved state (NAME.rsdump-state, version heldVersion),
// written as the frontier moves. A later run restores the hash there and
// fetches the pieces before it only if its reader asks for them (a reader
// that kept what it took from them, as unpack keeps its staged
// bitstreams, does not); the whole-file hash at the end then covers every
// byte, those of the earlier run included, so nothing the earlier run
// took is trusted unchecked.

// heldVersion marks a held download's state: a .part's state (version 1)
// is never read as a checkpoint, nor one as the other.
const heldVersion = 2

// held is a held download's pieces in memory.
type held struct {
	plen int64
	size int64

	mu   sync.Mutex
	bufs map[int]*[]byte
	mark int // the reader released the pieces below it

	// free are buffers let go of, for the next pieces: a free list of
	// the download's own rather than a sync.Pool, which every GC empties,
	// so that the window's buffers are allocated (and their pages
	// faulted in) once, not again after each collection.
	fmu  sync.Mutex
	free []*[]byte
}

// get returns a piece buffer, from the free list when it has one.
func (h *held) get() *[]byte {
	h.fmu.Lock()
	defer h.fmu.Unlock()
	if n := len(h.free); n > 0 {
		bp := h.free[n-1]
		h.free = h.free[:n-1]
		return bp
	}
	b := make([]byte, h.plen)
	return &b
}

// put gives a piece buffer back to the free list.
func (h *held) put(bp *[]byte) {
	h.fmu.Lock()
	h.free = append(h.free, bp)
	h.fmu.Unlock()
}

// errReleased: a read of bytes the reader had released.
var errReleased = errors.New("read of bytes released by the reader")

func (h *held) piece(off int64) (int, int64) { return int(off / h.plen), off % h.plen }

// WriteAt copies b into the pieces it covers.
func (h *held) WriteAt(b []byte, off int64) (int, error) {
	n := 0
	for len(b) > 0 {
		i, at := h.piece(off)
		h.mu.Lock()
		bp := h.bufs[i]
		if bp == nil {
			bp = h.get()
			h.bufs[i] = bp
		}
		k := copy((*bp)[at:], b)
		h.mu.Unlock()
		b, off, n = b[k:], off+int64(k), n+k
	}
	return n, nil
}

// adopt takes a whole verified piece's buffer as it is, without a copy;
// false when the piece is already held (the caller keeps its buffer).
func (h *held) adopt(i int, bp *[]byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bufs[i] != nil {
		return false
	}
	h.bufs[i] = bp
	return true
}

// ReadAt copies the held bytes at off into b.
func (h *held) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for len(b) > 0 && off < h.size {
		i, at := h.piece(off)
		h.mu.Lock()
		bp := h.bufs[i]
		if bp == nil {
			h.mu.Unlock()
			return n, fmt.Errorf("offset %d: %w", off, errReleased)
		}
		k := copy(b, (*bp)[at:min(h.plen, h.size-int64(i)*h.plen)])
		h.mu.Unlock()
		b, off, n = b[k:], off+int64(k), n+k
	}
	if len(b) > 0 {
		return n, io.EOF
	}
	return n, nil
}

// trim lets go of the pieces below limit.
func (h *held) trim(limit int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, bp := range h.bufs {
		if i < limit {
			delete(h.bufs, i)
			h.put(bp)
		}
	}
}

// Close lets go of every piece, and of the free list.
func (h *held) Close() error {
	h.trim(int(^uint(0) >> 1))
	h.fmu.Lock()
	h.free = nil
	h.fmu.Unlock()
	return nil
}

// StreamHeld is Stream for a file with piece hashes, held in memory (see
// held): nothing is written to dir but the checkpoint a later run
// resumes from. The reader must Release what it is done with, or the
// download waits for it once it is a window ahead. A file without piece
// hashes cannot be read before its whole-file hash matched, so it is
// downloaded into dir as Stream does.
func (g *Getter) StreamHeld(ctx context.Context, dir string, f File, first int64) *Streaming {
	if f.Pieces.Hashes == nil || f.Size <= 0 {
		return g.Stream(ctx, dir, f, first) // Held reports false
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Streaming{g: g, f: f, cancel: cancel, done: make(chan struct{}), first: first, held: true}
	go s.run(ctx, dir)
	return s
}

// openHeld sets up a held download: its pieces in memory, and the
// checkpoint of an earlier run, if there is one for this file, restored.
func (d *download) openHeld() error {
	if err := d.checkLinks(); err != nil {
		return err
	}
	d.mem = &held{plen: d.plen, size: d.f.Size, bufs: map[int]*[]byte{}}
	// Options.HeldWindow is the memory held ahead of the reader, besides
	// the pieces it asked for out of order (a ZIP's central directory);
	// with large pieces, a few whatever the connections.
	d.window = max(int(d.g.opts.HeldWindow/d.plen), 4)
	st, err := d.loadState()
	if err != nil || !st.sameFile(d.heldIdentity()) || st.Frontier <= 0 || st.Frontier > d.n {
		return nil
	}
	if w := &d.whole; w.h != nil {
		u, ok := w.h.(encoding.BinaryUnmarshaler)
		if !ok || len(st.HashState) == 0 || u.UnmarshalBinary(st.HashState) != nil {
			w.h.Reset()
			return nil
		}
		w.set(st.Frontier)
	}
	for i := range st.Frontier {
		d.pieces[i].skip = true
	}
	d.resumedTo = int64(st.Frontier) * d.plen
	return nil
}

// heldIdentity is the identity a held download's checkpoint carries,
// computed once: it hashes every piece hash, and a checkpoint is saved
// every MiB.
func (d *download) heldIdentity() stateFile {
	if d.heldID.Version == 0 {
		d.heldID = d.identity()
		d.heldID.Version = heldVersion
	}
	return d.heldID
}

// saveCheckpoint saves a held download's checkpoint, unless the frontier
// moved less than a MiB since the last one and not final. It is a hint
// the whole-file hash checks in the end: written without fsync.
func (d *download) saveCheckpoint(final bool) error {
	st, ok := d.checkpoint()
	if !ok || !final && int64(st.Frontier-d.savedAt)*d.plen < 1<<20 {
		return nil
	}
	d.savedAt = st.Frontier
	b, _ := json.Marshal(st)
	rel := d.relState()
	if err := d.root.WriteFile(rel+tmpSuffix, b, 0o644); err != nil {
		return fmt.Errorf("saving state: %w", d.confined(rel, err))
	}
	if err := d.root.Rename(rel+tmpSuffix, rel); err != nil {
		return fmt.Errorf("saving state: %w", d.confined(rel, err))
	}
	return nil
}

// checkpoint is the state a held download saves: how far it is verified
// in order, and the whole-file hash's state there. d.mu is not held.
func (d *download) checkpoint() (stateFile, bool) {
	st := d.heldIdentity()
	w := &d.whole
	if w.h == nil {
		d.mu.Lock()
		st.Frontier = d.cursor
		d.mu.Unlock()
		return st, true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	saved, err := saveHash(w.h)
	if err != nil {
		return st, false // a hash that cannot be saved: no checkpoint
	}
	st.Frontier, st.HashState = w.next, saved
	return st, true
}

// frontier is the first piece not yet in the whole-file hash (or, with
// none, the first not verified). It does not wait for the hash, which
// holds its lock while it hashes pieces in: the reader releasing bytes
// asks, and must not stop for it.
func (d *download) frontier() int {
	w := &d.whole
	if w.h == nil {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.cursor
	}
	return int(w.at.Load())
}

// trimHeld lets go of the pieces both the reader and the whole-file hash
// are past.
func (d *download) trimHeld() {
	d.mem.mu.Lock()
	mark := d.mem.mark
	d.mem.mu.Unlock()
	d.mem.trim(min(mark, d.frontier()))
}

// release marks the bytes before off as no longer needed by the reader:
// a piece of an earlier run's that it did not ask for is done without
// being fetched (the checkpoint's hash covers it), and the window moves.
func (d *download) release(off int64) {
	mark := int(min(off, d.f.Size) / d.plen)
	if off >= d.f.Size {
		mark = d.n
	}
	d.mem.mu.Lock()
	old := d.mem.mark
	if mark <= old {
		d.mem.mu.Unlock()
		return
	}
	d.mem.mark = mark
	d.mem.mu.Unlock()
	d.mu.Lock()
	for i := old; i < mark; i++ {
		if p := &d.pieces[i]; p.skip {
			p.skip = false
			p.done = true
			d.remaining--
			off, end := d.span(i)
			d.res.Resumed += end - off
			d.verifiedBytes(end - off)
		}
	}
	d.mu.Unlock()
	d.trimHeld()
	d.changed.notify()
	d.hashWake.notify()
}

// inWindow says whether piece i may be fetched now: within the window
// ahead of the reader's mark or of the first piece not yet fetched,
// whichever is further back. d.mu is held.
func (d *download) inWindow(i int) bool {
	if d.mem == nil {
		return true
	}
	if d.pieces[i].skip {
		return false
	}
	d.mem.mu.Lock()
	start := min(d.mem.mark, d.cursor)
	d.mem.mu.Unlock()
	return i < start+d.window
}

// publishHeld ends a held download: its whole-file hash checked, its
// checkpoint removed. There is no file to publish: the reader has the
// bytes.
func (d *download) publishHeld(sum string) error {
	if d.f.Authenticate != nil {
		// A held file's bytes went to its reader; none is left to check.
		return fmt.Errorf("%s: a file whose own signature must be checked cannot be held", d.f.Name)
	}
	if d.f.HashAlg != "" && sum != d.f.Hash {
		d.root.Remove(d.relState())
		why := "every piece matched its piece hash: the source's hashes disagree"
		if d.resumedTo > 0 {
			why = fmt.Sprintf("the hash went on from the checkpoint in %s, at byte %d: it is removed, and the next run fetches the file whole",
				d.osPath(d.relState()), d.resumedTo)
		}
		return fmt.Errorf("%s: %s %s, want %s: %w (%s)", d.f.Name, d.f.HashAlg, sum, d.f.Hash, ErrFileHash, why)
	}
	d.root.Remove(d.relState())
	return nil
}
