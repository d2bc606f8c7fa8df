package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
)

// An S3 object cannot grow, and rewriting a whole log on every append
// costs in proportion to its length: a journal of 100,000 packages would
// be sent 100,000 times. So Bucket keeps an appended name as segments,
// NAME.seg/00000001, ..., and rewrites only the last one, until it holds
// segmentMax bytes; Open of NAME reads them in order, and Remove deletes
// them.
const segmentMax = 256 << 10

// segments is where Bucket's appended names stand: the last segment's
// number and bytes, learnt from the bucket at the first Append.
type segments struct {
	mu    sync.Mutex
	names map[string]*segment
}

type segment struct {
	n   int
	buf []byte
}

func segmentDir(name string) string         { return name + ".seg/" }
func segmentName(name string, n int) string { return fmt.Sprintf("%s%08d", segmentDir(name), n) }

// Append adds data to the last segment of name, or starts the next one
// when the last is full.
func (b *Bucket) Append(ctx context.Context, name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	b.segs.mu.Lock()
	defer b.segs.mu.Unlock()
	s, err := b.lastSegment(ctx, name)
	if err != nil {
		return err
	}
	if len(s.buf) > 0 && len(s.buf)+len(data) > segmentMax {
		s.n, s.buf = s.n+1, nil
	}
	buf := append(s.buf[:len(s.buf):len(s.buf)], data...)
	if err := b.WriteFile(ctx, segmentName(name, s.n), buf); err != nil {
		return err
	}
	s.buf = buf
	return nil
}

// lastSegment finds the segment appends go to: known from an earlier
// Append, or the last one in the bucket.
func (b *Bucket) lastSegment(ctx context.Context, name string) (*segment, error) {
	if s, ok := b.segs.names[name]; ok {
		return s, nil
	}
	if err := b.seedSegments(ctx, name); err != nil {
		return nil, err
	}
	s := &segment{n: 1}
	var last string
	err := b.List(ctx, segmentDir(name), func(in Info) error { last = in.Name; return nil })
	if err != nil {
		return nil, err
	}
	if last != "" {
		if _, err := fmt.Sscanf(strings.TrimPrefix(last, segmentDir(name)), "%d", &s.n); err != nil {
			return nil, fmt.Errorf("%s: %w", b.Loc(last), err)
		}
		if s.buf, err = ReadFile(ctx, b, last, segmentMax+1<<20); err != nil {
			return nil, err
		}
	}
	if b.segs.names == nil {
		b.segs.names = map[string]*segment{}
	}
	b.segs.names[name] = s
	return s, nil
}

// seedSegments makes an object written whole under name (a directory's
// file copied into the bucket), which Open would read rather than the
// segments, the first segments: its bytes are written as segments of
// segmentMax, then it is removed, before anything is appended. A seeding
// a kill interrupted (segments holding the start of the object's bytes,
// or all of them) is finished; segments holding anything else are left
// as they are.
func (b *Bucket) seedSegments(ctx context.Context, name string) error {
	rc, err := b.openObject(ctx, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	obj, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", b.Loc(name), err)
	}
	var done []byte
	if segs, err := b.openSegments(ctx, name); err == nil {
		done, err = io.ReadAll(segs)
		segs.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", b.Loc(segmentDir(name)), err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if !bytes.Equal(done, obj) && (!bytes.HasPrefix(obj, done) || len(done)%segmentMax != 0) {
		return nil // not a seeding: left as it is
	}
	for off := len(done); off < len(obj); off += segmentMax {
		if err := b.WriteFile(ctx, segmentName(name, off/segmentMax+1), obj[off:min(off+segmentMax, len(obj))]); err != nil {
			return err
		}
	}
	return b.removeObject(ctx, name)
}

// openSegments reads an appended name's segments in order, or is
// fs.ErrNotExist when it has none.
func (b *Bucket) openSegments(ctx context.Context, name string) (io.ReadCloser, error) {
	var names []string
	if err := b.List(ctx, segmentDir(name), func(in Info) error { names = append(names, in.Name); return nil }); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, &notFound{err: fmt.Errorf("%s: %w", b.Loc(name), fs.ErrNotExist)}
	}
	readers := make([]io.Reader, 0, len(names))
	var closers []io.Closer
	for _, n := range names {
		rc, err := b.openObject(ctx, n)
		if err != nil {
			closeAll(closers)
			return nil, err
		}
		readers, closers = append(readers, rc), append(closers, rc)
	}
	return multiReadCloser{io.MultiReader(readers...), closers}, nil
}

// removeSegments deletes an appended name's segments.
func (b *Bucket) removeSegments(ctx context.Context, name string) error {
	b.segs.mu.Lock()
	delete(b.segs.names, name)
	b.segs.mu.Unlock()
	var names []string
	if err := b.List(ctx, segmentDir(name), func(in Info) error { names = append(names, in.Name); return nil }); err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, b.removeObject(ctx, n))
	}
	return errors.Join(errs...)
}

type multiReadCloser struct {
	io.Reader
	closers []io.Closer
}

func (m multiReadCloser) Close() error { return closeAll(m.closers) }

func closeAll(cs []io.Closer) error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
