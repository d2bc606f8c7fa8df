package pack

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	kflate "github.com/klauspost/compress/flate"

	"github.com/rsdump/rsdump/internal/zipw"
)

const chunkSize = 1 << 20

// addStreamed appends a large file: a reader goroutine feeds the manifest
// hashes while this one compresses and writes, so the file's hashes and
// the package's hash run on different cores. A stored file is read once
// before that for its CRC-32 (see create). It returns
// skipped=true when the file changed under --skip-changed and was cut off
// the package again.
func (w *pkgWriter) addStreamed(ctx context.Context, it item) (skipped bool, err error) {
	mark, err := w.zw.Mark()
	if err != nil {
		return false, err
	}
	state, err := w.tee.save()
	if err != nil {
		return false, err
	}
	name := w.entryName(it)
	typ, err := w.stream(ctx, it, name)
	if err == nil {
		w.record(it, name, w.mh.Sums().String(), w.mh.PieceSums(), typ)
		return false, nil
	}
	if !errors.Is(err, ErrChanged) || !w.opts.SkipChanged {
		return false, err
	}
	w.zw.Rollback(mark)
	return true, w.tee.restore(state)
}

func (w *pkgWriter) stream(ctx context.Context, it item, name string) (string, error) {
	beforeRead(it.rel)
	f, err := os.Open(it.abs)
	if err != nil {
		return "", &FileError{Path: it.rel, Err: err}
	}
	defer f.Close()
	w.mh.Reset()
	setPieces(w.mh, it.size)
	chunks, errc := readChunks(ctx, f, it.size+1, w.mh) // one byte more notices growth
	first, ok := <-chunks
	typ := mediaType(it.rel, head(first))
	method := w.chooseMethod(it.rel, typ, first)
	ew, err := w.create(ctx, f, it, name, method)
	if err != nil {
		drain(chunks)
		return "", err
	}
	for ; ok; first, ok = <-chunks {
		if _, err := ew.Write(first); err != nil {
			drain(chunks)
			return "", err
		}
	}
	if err := <-errc; err != nil {
		return "", &FileError{Path: it.rel, Err: err}
	}
	if err := unchanged(f, it, w.mh.Len()); err != nil {
		return "", err
	}
	if err := ew.Close(); errors.Is(err, zipw.ErrMismatch) {
		return "", &FileError{Path: it.rel, Err: fmt.Errorf("%w (its CRC-32 differs between two reads)", ErrChanged)}
	} else if err != nil {
		return "", err
	}
	return typ, nil
}

// create starts the file's entry. A deflated entry streams with a data
// descriptor; a stored one needs its CRC-32 in its local header (see
// zipw.Create), so the file is read once more for it first. Only files
// over smallMax that do not deflate pay that read, at CRC-32 speed.
func (w *pkgWriter) create(ctx context.Context, f *os.File, it item, name string, method uint16) (*zipw.EntryWriter, error) {
	h := zipw.Header{Name: name, Modified: it.mtime, Method: method, Mode: it.mode.Perm()}
	if method != zipw.Store {
		return w.zw.Create(h, it.size)
	}
	crc, err := fileCRC(ctx, f, it)
	if err != nil {
		return nil, err
	}
	return w.zw.CreateStored(h, crc, it.size)
}

// fileCRC reads the CRC-32 of f's it.size bytes, with ReadAt so that the
// chunk reader's offset is left alone.
func fileCRC(ctx context.Context, f *os.File, it item) (uint32, error) {
	buf := make([]byte, 4*chunkSize)
	var crc uint32
	var off int64
	for off <= it.size { // one byte more notices growth
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n, err := f.ReadAt(buf[:min(int64(len(buf)), it.size+1-off)], off)
		crc = crc32.Update(crc, crc32.IEEETable, buf[:n])
		off += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, &FileError{Path: it.rel, Err: err}
		}
	}
	if off != it.size {
		return 0, &FileError{Path: it.rel, Err: fmt.Errorf("%w (size %d, read %d)", ErrChanged, it.size, off)}
	}
	return crc, nil
}

// readChunks reads up to limit bytes of r in chunks, hashing each before
// handing it on, until ctx is done. Chunks are fresh slices: a few are in
// flight at once.
func readChunks(ctx context.Context, r io.Reader, limit int64, h io.Writer) (<-chan []byte, <-chan error) {
	chunks := make(chan []byte, 8)
	errc := make(chan error, 1)
	go func() {
		defer close(chunks)
		lr := io.LimitReader(r, limit)
		for {
			b := make([]byte, chunkSize)
			n, err := io.ReadFull(lr, b)
			if n > 0 {
				h.Write(b[:n])
				select {
				case chunks <- b[:n]:
				case <-ctx.Done():
					errc <- ctx.Err()
					return
				}
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				errc <- nil
				return
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	return chunks, errc
}

func drain(c <-chan []byte) {
	for range c {
	}
}

// chooseMethod decides from the first chunk: in auto mode a sample that
// does not deflate well means the whole file is stored.
func (w *pkgWriter) chooseMethod(name, typ string, sample []byte) uint16 {
	switch w.opts.Compress {
	case Store:
		return zipw.Store
	case Deflate:
		return zipw.Deflate
	}
	if isCompressed(name, typ) || len(sample) == 0 {
		return zipw.Store
	}
	var cw countingWriter
	fw, _ := kflate.NewWriter(&cw, w.opts.Level)
	fw.Write(sample)
	fw.Close()
	if float64(cw) > shrinkRatio*float64(len(sample)) {
		return zipw.Store
	}
	return zipw.Deflate
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
