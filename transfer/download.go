package transfer

import (
	"context"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	fsatomic "github.com/rsdump/rsdump/internal/atomic"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/flock"
)

// download is one file in progress.
type download struct {
	g         *Getter
	f         File
	root      *os.Root // the output directory: every file operation goes through it
	dir       string   // its path, for messages
	final     string
	partPath  string
	statePath string
	part      *os.File  // the .part; nil when held
	mem       *held     // the pieces in memory, when held (StreamHeld)
	window    int       // pieces a held download fetches ahead of its reader
	resumedTo int64     // a held download's checkpoint: its hash covers the bytes before
	held      bool      // kept in memory for a Streaming reader (StreamHeld)
	savedAt   int       // the frontier of a held download's last checkpoint (saver only)
	heldID    stateFile // a held download's identity (heldIdentity)
	plen      int64
	n         int
	ctx       context.Context
	cancel    context.CancelFunc

	mu          sync.Mutex
	pieces      []piece
	remaining   int
	cursor      int
	mirrors     []*mirror
	err         error
	nextID      int64
	dirty       bool
	res         Result
	stream      *mirror // set when the file must come in one request from it
	streamTried bool
	urgent      []int           // pieces a Streaming reader waits for: fetched first
	opened      func(*download) // told once the .part is open (Stream)

	whole    wholeHash
	bufs     sync.Pool      // piece buffers of plen bytes (runBuffered)
	waiting  sync.WaitGroup // pieces waiting for the frontier (runBuffered)
	changed  wakeup         // a piece or mirror changed state
	hashWake wakeup         // a piece was completed
	verified atomic.Int64
	fetched  atomic.Int64
}

func (g *Getter) newDownload(dir string, f File) (*download, error) {
	if err := checkFile(f); err != nil {
		return nil, err
	}
	f.HashAlg, _ = digest.Canonical(f.HashAlg) // "SHA-256" is "sha-256"
	f.Hash = strings.ToLower(f.Hash)
	ms, err := newMirrors(f, g.opts.Locations)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		m.stat = g.budget.host(m.host)
	}
	final := filepath.Join(dir, filepath.FromSlash(f.Name))
	d := &download{g: g, f: f, dir: dir, final: final, partPath: final + partSuffix,
		statePath: final + stateSuffix, mirrors: ms}
	d.plen = f.Pieces.Length
	if f.Pieces.Hashes == nil {
		d.plen = g.opts.RangeSize
	}
	d.n = int(max(1, (f.Size+d.plen-1)/d.plen))
	d.pieces = make([]piece, d.n)
	d.remaining = d.n
	d.res = Result{Name: f.Name, Size: f.Size}
	if f.HashAlg != "" {
		d.whole.h, _ = newHash(f.HashAlg) // checked in checkFile
		if testWholeHash != nil {
			d.whole.h = testWholeHash(d.whole.h)
		}
	}
	return d, nil
}

// testWholeHash, set by tests, wraps each download's whole-file hash (to
// slow it down, say).
var testWholeHash func(hash.Hash) hash.Hash

func checkFile(f File) error {
	if f.HashAlg == "" && f.Pieces.Hashes == nil && len(f.Unverifiable) > 0 {
		return fmt.Errorf("%s: only %s hashes given: %w; not downloaded unverified",
			f.Name, strings.Join(f.Unverifiable, ", "), ErrUnverifiable)
	}
	if f.Size < 0 {
		return fmt.Errorf("%s: unknown size", f.Name)
	}
	if f.HashAlg == "" && f.Hash != "" {
		return fmt.Errorf("%s: a whole-file hash without its algorithm", f.Name)
	}
	if f.HashAlg != "" {
		if _, err := newHash(f.HashAlg); err != nil {
			return fmt.Errorf("%s: %w; not downloaded unverified", f.Name, err)
		}
	}
	p := f.Pieces
	if p.Hashes == nil {
		return nil
	}
	if _, err := newHash(p.Type); err != nil {
		return fmt.Errorf("%s: pieces: %w", f.Name, err)
	}
	if p.Length <= 0 || int64(len(p.Hashes)) != max(1, (f.Size+p.Length-1)/p.Length) {
		return fmt.Errorf("%s: %d piece hashes of %d bytes do not cover %d bytes", f.Name, len(p.Hashes), p.Length, f.Size)
	}
	return nil
}

// span is piece i's byte range [off, end).
func (d *download) span(i int) (int64, int64) {
	off := int64(i) * d.plen
	return off, min(off+d.plen, d.f.Size)
}

// run downloads the file, or finds it complete, and publishes it.
func (d *download) run(ctx context.Context) (err error) {
	start := time.Now()
	defer func() { d.res.Elapsed = time.Since(start) }()
	if d.held {
		if err := d.openHeld(); err != nil {
			return err
		}
	} else {
		if done, err := d.alreadyComplete(); err != nil || done {
			return err
		}
		if err := d.open(); err != nil {
			return err
		}
		defer func() {
			if d.part != nil {
				flock.Close(d.part)
			}
		}()
	}
	if d.opened != nil {
		d.opened(d)
	}
	d.mu.Lock()
	resumed := d.res.Resumed // a held download's reader may count its pieces already (release)
	d.mu.Unlock()
	d.g.opts.Events(&FileStart{Name: d.f.Name, Size: d.f.Size, Resumed: resumed})
	sum, err := d.transfer(ctx)
	if err == nil && d.needsRepair(sum) {
		sum, err = d.repair(ctx, sum)
	}
	if err != nil {
		return err
	}
	if d.held {
		return d.publishHeld(sum)
	}
	return d.publish(sum)
}

// data is where the download's bytes are written and read back: the
// .part, or a held download's memory.
func (d *download) data() interface {
	io.ReaderAt
	io.WriterAt
} {
	if d.mem != nil {
		return d.mem
	}
	return d.part
}

// transfer runs the workers, the state saver and the whole-file hasher;
// it returns the whole-file digest ("" when there is no hash to check).
func (d *download) transfer(ctx context.Context) (string, error) {
	d.ctx, d.cancel = context.WithCancel(ctx)
	defer d.cancel()
	var sum string
	hashErr := make(chan error, 1)
	go func() { s, err := d.hashFrontier(); sum = s; hashErr <- err }()
	saverDone := make(chan struct{})
	stopSaver := make(chan struct{})
	go func() { defer close(saverDone); d.saver(stopSaver) }()
	werr := d.workers(ctx)
	if werr == nil && d.stream != nil {
		werr = d.streamFallback()
	}
	close(stopSaver)
	<-saverDone
	if err := d.saveState(); err != nil && werr == nil {
		werr = err
	}
	if werr != nil {
		d.cancel()
		<-hashErr
		return "", werr
	}
	return sum, <-hashErr
}

func (d *download) workers(ctx context.Context) error {
	var g errgroup.Group
	for range d.workerCount() {
		g.Go(func() error { return d.worker(d.ctx) })
	}
	werr := g.Wait()
	d.waiting.Wait() // pieces handed off by runBuffered
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case d.err != nil:
		return d.err
	case werr != nil:
		return werr
	}
	return nil
}

// workerCount: enough workers to fill every slot this file could use,
// and with several hosts one more per piece for its end-game copy: a
// file of one piece on a drip mirror is otherwise never overtaken.
func (d *download) workerCount() int {
	hosts := map[string]bool{}
	for _, m := range d.mirrors {
		hosts[m.host] = true
	}
	d.mu.Lock()
	want := d.remaining // a held download's reader may change it (release)
	d.mu.Unlock()
	if len(hosts) > 1 {
		want *= 2
	}
	return max(1, min(d.g.opts.Connections, len(hosts)*d.g.opts.PerMirror, want))
}

func (d *download) worker(ctx context.Context) error {
	for {
		a, err := d.next(ctx)
		if a == nil || err != nil {
			return nil // the file's outcome is in d.err or ctx
		}
		if err := d.g.budget.acquire(a.ctx); err != nil {
			d.finish(a, errLost)
			return nil
		}
		err = d.runAttempt(a)
		if err == errHandedOff {
			continue
		}
		if a.bodyDone.IsZero() {
			d.g.budget.release()
		}
		d.finish(a, err)
	}
}

// runAttempt reads a piece of at most maxBuffered bytes into memory, then
// checks and writes it (runBuffered). A larger primary copy streams into
// the file at its offset; a larger end-game copy is kept in memory until
// it wins (pickPiece duplicates only pieces of at most maxDupPiece bytes).
func (d *download) runAttempt(a *attempt) error {
	if d.buffered() {
		return d.runBuffered(a)
	}
	if a.dup {
		off, end := d.span(a.piece)
		a.buf = make([]byte, 0, end-off)
		return d.fetch(a, func(_ int64, b []byte) error { a.buf = append(a.buf, b...); return nil })
	}
	return d.fetch(a, func(off int64, b []byte) error { return d.writePrimary(a, off, b) })
}

// writePrimary writes part of a primary copy unless another copy has won
// the piece. A failed write fails the file, but only once the piece's
// write lock is released: finish holds d.mu while writeDup waits for that
// lock, so taking d.mu under it would deadlock.
func (d *download) writePrimary(a *attempt, off int64, b []byte) error {
	p := &d.pieces[a.piece]
	p.wmu.Lock()
	if p.writer != a.id {
		p.wmu.Unlock()
		return errLost
	}
	_, err := d.data().WriteAt(b, off)
	p.wmu.Unlock()
	if err != nil {
		return d.failWrite(err)
	}
	return nil
}

// failWrite fails the file after a write to the .part failed; the
// attempt ends as lost. Never called with a piece's wmu held.
func (d *download) failWrite(err error) error {
	d.mu.Lock()
	d.failLocked(fmt.Errorf("%s: %w", d.partPath, err))
	d.mu.Unlock()
	return errLost
}

func (d *download) received(m *mirror, n int) {
	d.fetched.Add(int64(n))
	m.stat.received.Add(int64(n))
}

// publish checks the whole-file hash and size, syncs, renames the .part
// to the final name and removes the state: a mismatch never gets a name.
func (d *download) publish(sum string) error {
	fi, err := d.part.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", d.partPath, err)
	}
	if fi.Size() != d.f.Size {
		return fmt.Errorf("%s: size %d, want %d", d.partPath, fi.Size(), d.f.Size)
	}
	if d.f.HashAlg != "" && sum != d.f.Hash {
		return d.hashMismatch(sum)
	}
	if d.f.Authenticate != nil {
		if err := d.f.Authenticate(io.NewSectionReader(d.part, 0, fi.Size())); err != nil {
			return fmt.Errorf("%s: %w", d.f.Name, err)
		}
	}
	publish := fsatomic.PublishIn
	if d.g.opts.Scratch {
		publish = fsatomic.MoveIn
	}
	err = publish(d.root, d.part, d.relPart(), d.f.Name)
	d.part = nil
	if err != nil {
		return err
	}
	d.root.Remove(d.relState())
	d.res.Path = d.final
	d.res.Unverified = d.f.HashAlg == "" && d.f.Pieces.Hashes == nil
	return nil
}

// hashMismatch: without piece hashes no range can be trusted, so the
// data and state go, and the file starts over (at once when ranges were
// resumed, see startOver; else in the next run); with piece hashes every
// piece matched its hash in this run (fetched, or read back on resume),
// so the document is inconsistent: they are kept for inspection.
func (d *download) hashMismatch(sum string) error {
	err := fmt.Errorf("%s: %s %s, want %s: %w", d.f.Name, d.f.HashAlg, sum, d.f.Hash, ErrFileHash)
	d.root.Remove(d.relState())
	if d.f.Pieces.Hashes != nil {
		return fmt.Errorf("%w (every piece matched its piece hash: the source's hashes disagree; %s kept)", err, d.partPath)
	}
	if d.res.Resumed > 0 {
		err = fmt.Errorf("%w (%d bytes came from %s, which no piece hash can check; it is removed, to fetch the whole file again)",
			err, d.res.Resumed, d.partPath)
	}
	flock.Close(d.part)
	d.part = nil
	d.root.Remove(d.relPart())
	return err
}
