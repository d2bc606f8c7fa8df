package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/rsdump/rsdump/finding"
)

// Streaming is a file being downloaded (Stream) whose verified bytes can
// be read while the rest arrives. ReadAt waits until every piece its
// range covers has matched its piece hash, and has the scheduler fetch
// those pieces before any other, so that a reader that starts at the end
// (a ZIP's central directory) is not kept waiting for the whole file;
// then it reads them from the .part, whose pages were just written: that
// file is the engine's resume record, as in Get, and never read back
// from the disk but by a resumed run. A file without piece hashes has no
// byte verified before its whole-file hash matched: ReadAt then waits
// for the download to end. Wait gives the download's outcome: its length
// and whole-file hash checked, as Get checks them.
type Streaming struct {
	g      *Getter
	f      File
	cancel context.CancelFunc
	done   chan struct{} // closed once the download ended; res is then set
	res    *Result
	moved  wakeup // the download (re)started, or ended
	first  int64  // where reading starts: fetched first
	held   bool   // pieces kept in memory, not in a .part (StreamHeld)

	mu      sync.Mutex
	d       *download // the download in progress, once its .part is open
	rf      *os.File  // reads d's .part (its handle follows the rename to the final name)
	openErr error
}

// Stream starts downloading f into dir, as Get does with one file, and
// returns at once. The pieces from first to the end are fetched before
// the others: where the reader starts (a ZIP's last bytes, its central
// directory), so that it need not wait for a connection to come free.
// Close it when done with it; what it leaves in dir is Get's: the
// published file, or on failure the .part and state a later run resumes
// from.
func (g *Getter) Stream(ctx context.Context, dir string, f File, first int64) *Streaming {
	ctx, cancel := context.WithCancel(ctx)
	s := &Streaming{g: g, f: f, cancel: cancel, done: make(chan struct{}), first: first}
	go s.run(ctx, dir)
	return s
}

func (s *Streaming) run(ctx context.Context, dir string) {
	defer func() {
		close(s.done)
		s.moved.notify()
	}()
	if err := checkNames([]File{s.f}); err != nil {
		s.res = &Result{Name: s.f.Name, Size: s.f.Size, Err: err}
		return
	}
	root, err := openRoot(dir)
	if err != nil {
		s.res = &Result{Name: s.f.Name, Size: s.f.Size, Err: err}
		return
	}
	defer root.Close()
	if s.f.Size > 0 {
		s.g.opts.Events(finding.Planned{Bytes: s.f.Size})
	}
	s.res = s.g.getOne(ctx, root, dir, s.f, s.attach, s.held)
}

// attach takes the download once its .part is open (or, held, its
// memory set up).
func (s *Streaming) attach(d *download) {
	var f *os.File
	var err error
	if d.mem == nil {
		f, err = d.root.Open(d.relPart())
	}
	s.mu.Lock()
	if s.rf != nil {
		s.rf.Close() // a download started over: its .part is a new file
	}
	s.d, s.rf, s.openErr = d, f, err
	s.mu.Unlock()
	if s.first >= 0 && s.first < s.f.Size && d.f.Pieces.Hashes != nil {
		d.verifiedSpan(s.first, s.f.Size) // before any worker starts
	}
	s.moved.notify()
}

// Size is the file's length.
func (s *Streaming) Size() int64 { return s.f.Size }

// ReadAt reads verified bytes of the file, waiting for them as long as
// the download goes on; it fails with the download's error if that ends
// before they are verified.
func (s *Streaming) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset", s.f.Name)
	}
	if off >= s.f.Size {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), s.f.Size)
	rf, err := s.await(off, end)
	if err != nil {
		return 0, err
	}
	n, err := rf.ReadAt(p[:end-off], off)
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

// await returns a handle to read [off, end) from once every piece of it
// is verified.
func (s *Streaming) await(off, end int64) (io.ReaderAt, error) {
	for {
		moved := s.moved.wait()
		select {
		case <-s.done:
			return s.final()
		default:
		}
		s.mu.Lock()
		d, rf, err := s.d, s.rf, s.openErr
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		var wake <-chan struct{}
		if d != nil && d.f.Pieces.Hashes != nil {
			wake = d.hashWake.wait()
			if d.verifiedSpan(off, end) {
				if d.mem != nil {
					return d.mem, nil
				}
				return rf, nil
			}
		}
		select {
		case <-wake:
		case <-moved:
		}
	}
}

// final is the handle to read from once the download ended: the .part's
// (now the published file), or for a file found complete, the file.
func (s *Streaming) final() (io.ReaderAt, error) {
	if s.res.Err != nil {
		return nil, s.res.Err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.d != nil && s.d.mem != nil {
		return s.d.mem, nil // what the reader has not released
	}
	if s.rf == nil && s.openErr == nil {
		s.rf, s.openErr = os.Open(s.res.Path)
	}
	return s.rf, s.openErr
}

// verifiedSpan reports whether every piece of [off, end) is verified,
// and when not, makes those that are not the ones fetched first.
func (d *download) verifiedSpan(off, end int64) bool {
	first, last := int(off/d.plen), int((end-1)/d.plen)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.urgent = d.urgent[:0]
	for i := first; i <= last; i++ {
		if p := &d.pieces[i]; !p.done {
			p.skip = false // asked for: an earlier run's piece is fetched again
			d.urgent = append(d.urgent, i)
		}
	}
	if len(d.urgent) == 0 {
		return true
	}
	d.changed.notify()
	return false
}

// urgentPiece is the first piece a Streaming reader waits for that no
// one is fetching and m may serve; -1 when there is none. d.mu is held.
func (d *download) urgentPiece(m *mirror) int {
	for _, i := range d.urgent {
		p := &d.pieces[i]
		if !p.done && p.primary == nil && p.dup == nil && d.mayServe(m, p) {
			return i
		}
	}
	return -1
}

// Release tells a held download (StreamHeld) that the reader needs no
// byte before off any more: the memory they take is let go once the
// whole-file hash is past them too, and the download fetches further. A
// piece of an earlier run's checkpoint the reader never asked for counts
// as done. A .part download ignores it.
func (s *Streaming) Release(off int64) {
	s.mu.Lock()
	d := s.d
	s.mu.Unlock()
	if d != nil && d.mem != nil {
		d.release(off)
	}
}

// Held says the download is held in memory (StreamHeld, with piece
// hashes): its reader must Release what it is done with.
func (s *Streaming) Held() bool { return s.held }

// ResumedTo is, for a held download resumed from an earlier run's
// checkpoint, where that checkpoint stands: the bytes before it are not
// fetched again unless read (a reader that kept what it took from them
// releases them). 0 otherwise, or before the download started.
func (s *Streaming) ResumedTo() int64 {
	for {
		moved := s.moved.wait()
		s.mu.Lock()
		d := s.d
		s.mu.Unlock()
		if d != nil {
			return d.resumedTo
		}
		select {
		case <-s.done:
			return 0
		case <-moved:
		}
	}
}

// Wait waits for the download to end and returns its result; the error
// is the result's.
func (s *Streaming) Wait() (*Result, error) {
	<-s.done
	return s.res, s.res.Err
}

// Close stops the download if it still runs, waits for it to end, and
// closes what it read with.
func (s *Streaming) Close() error {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rf != nil {
		s.rf.Close()
		s.rf = nil
	}
	if s.d != nil && s.d.mem != nil {
		s.d.mem.Close()
	}
	s.openErr = errors.New(s.f.Name + ": closed")
	return nil
}
