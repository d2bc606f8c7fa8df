package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Ranges reads a remote file by byte ranges, from the best of its mirrors
// that answers: an io.ReaderAt over the network, for reading a package's
// central directory, its manifest or one of its bitstreams without
// downloading the package. Each read asks one mirror for exactly the
// bytes wanted (checkRange: an error page or a server that ignores Range
// never passes for them), and on failure the next mirror, a few rounds
// with backoff. Nothing it returns is checked against a hash: the caller
// checks what it reads (a bitstream against its manifest's hash, a
// directory entry against the manifest's names). Small reads, which ZIP
// headers are, are served from blocks read ahead; a read that continues
// the last one reads further ahead, up to maxAhead.
type Ranges struct {
	g       *Getter
	ctx     context.Context
	f       File
	urls    []string
	fetched atomic.Int64

	mu             sync.Mutex
	block          []byte // the bytes read ahead last
	boff           int64  // their offset
	ahead          int64  // the next read-ahead's length
	secOff, secEnd int64  // the span the caller said it reads next (Section)
}

const (
	minAhead    = 64 << 10
	maxAhead    = 4 << 20
	rangeRounds = 3 // tries of every mirror before a read fails
)

// Ranges returns a reader of f's bytes from its mirrors, in the engine's
// order of preference. f.Size must be known.
func (g *Getter) Ranges(ctx context.Context, f File) (*Ranges, error) {
	if f.Size < 0 {
		return nil, fmt.Errorf("%s: length not known: cannot read it by ranges", f.Name)
	}
	ms, err := newMirrors(f, g.opts.Locations)
	if err != nil {
		return nil, err
	}
	r := &Ranges{g: g, ctx: ctx, f: f, ahead: minAhead}
	for _, m := range ms {
		r.urls = append(r.urls, m.url)
	}
	return r, nil
}

// Section says that the reads that follow are of the n bytes at off (a
// ZIP entry's local header, then its data): read ahead no further than
// their end, and the whole of them (up to maxAhead) in the first request.
// It implements ziprange.Sectioned.
func (r *Ranges) Section(off, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secOff, r.secEnd = off, off+n
}

// Size is the file's length.
func (r *Ranges) Size() int64 { return r.f.Size }

// Fetched is the number of bytes received so far.
func (r *Ranges) Fetched() int64 { return r.fetched.Load() }

// ReadAt implements io.ReaderAt.
func (r *Ranges) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset", r.f.Name)
	}
	if off >= r.f.Size {
		return 0, io.EOF
	}
	want := p[:min(int64(len(p)), r.f.Size-off)]
	n, err := r.read(want, off)
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

func (r *Ranges) read(p []byte, off int64) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if off >= r.boff && off+int64(len(p)) <= r.boff+int64(len(r.block)) {
		return copy(p, r.block[off-r.boff:]), nil
	}
	if off == r.boff+int64(len(r.block)) && len(r.block) > 0 {
		r.ahead = min(2*r.ahead, maxAhead) // sequential: read further ahead
	} else {
		r.ahead = minAhead
	}
	end := r.f.Size
	if off >= r.secOff && off < r.secEnd {
		end = r.secEnd
		if off == r.secOff {
			r.ahead = maxAhead // the whole span, up to maxAhead, in one request
		}
	}
	if int64(len(p)) >= r.ahead {
		return r.fetch(p, off) // large enough on its own: no copy
	}
	n := max(min(r.ahead, end-off), int64(len(p)))
	block := make([]byte, n)
	if _, err := r.fetch(block, off); err != nil {
		return 0, err
	}
	r.block, r.boff = block, off
	return copy(p, block), nil
}

// fetch fills p with the bytes at off, trying every mirror in turn, a few
// rounds, backing off between them. A mirror that fails goes to the back
// of the line.
func (r *Ranges) fetch(p []byte, off int64) (int, error) {
	var errs []error
	for round := range rangeRounds {
		for range len(r.urls) {
			u := r.urls[0]
			err := r.fetchFrom(u, p, off)
			if err == nil {
				return len(p), nil
			}
			if ctxErr := r.ctx.Err(); ctxErr != nil {
				return 0, ctxErr
			}
			errs = append(errs, err)
			r.urls = append(r.urls[1:], u) // the next read asks the others first
		}
		select {
		case <-r.ctx.Done():
			return 0, r.ctx.Err()
		case <-time.After(backoff(round, 0)):
		}
	}
	return 0, fmt.Errorf("%s: bytes %d-%d: %w", r.f.Name, off, off+int64(len(p))-1, errors.Join(compact(errs)...))
}

// fetchFrom reads the range from one mirror, through the engine's request
// (checkRange: exactly the bytes asked for, or an error).
func (r *Ranges) fetchFrom(url string, p []byte, off int64) error {
	resp, err := rangeRequest(r.ctx, r.g.client, url, off, off+int64(len(p)), r.f.Size)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.ReadFull(resp.Body, p)
	r.fetched.Add(int64(n))
	if err != nil {
		return fmt.Errorf("%s: reading bytes %d-%d: %w", url, off, off+int64(len(p))-1, err)
	}
	return nil
}

// compact keeps one of each error text: the rounds repeat them.
func compact(errs []error) []error {
	var out []error
	seen := map[string]bool{}
	for _, e := range errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	return slices.Clip(out)
}
