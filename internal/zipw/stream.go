package zipw

import (
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	kflate "github.com/klauspost/compress/flate"
)

// ErrMismatch is returned by Close when a stored entry's data is not the
// size or CRC-32 announced by CreateStored.
var ErrMismatch = errors.New("zip entry data differs from its announced size or CRC-32")

// EntryWriter receives the uncompressed bytes of a streamed entry.
type EntryWriter struct {
	w     *Writer
	e     *entry
	crc   hash.Hash32
	comp  io.WriteCloser // nil for Store
	usize int64
	cw    countWriter
	sized bool // CreateStored: no descriptor, the header holds CRC and size
}

type countWriter struct {
	w *Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	if err := c.w.write(p); err != nil {
		return 0, err
	}
	c.n += int64(len(p))
	return len(p), nil
}

// Create starts a streamed deflated entry. sizeHint is the expected
// uncompressed size: when it reaches 4 GiB the local header carries ZIP64
// fields, and the entry may not grow past 4 GiB otherwise. The CRC and
// sizes follow the data in a descriptor, so the archive is written
// strictly sequentially. A reader streaming the archive finds the end of
// deflated data from the deflate stream itself.
//
// Stored entries are never written so: a streaming reader can find the end
// of stored data only by looking for a descriptor's signature, which the
// data itself may hold (bsdtar then ends the entry early and reads the
// rest as other entries). They take CreateStored or WriteRaw.
func (w *Writer) Create(h Header, sizeHint int64) (*EntryWriter, error) {
	if err := w.check(h); err != nil {
		return nil, err
	}
	if h.Method != Deflate {
		return nil, fmt.Errorf("zipw: %s: a stored entry with a data descriptor can be faked by its data; use CreateStored", h.Name)
	}
	e := &entry{Header: h, flags: flagDescriptor, offset: w.off}
	// Deflate can expand incompressible data slightly, so leave margin.
	e.localZip64 = sizeHint >= u32max-u32max/64
	if err := w.writeLocal(e); err != nil {
		return nil, err
	}
	ew := &EntryWriter{w: w, e: e, crc: crc32.NewIEEE(), cw: countWriter{w: w}}
	if h.Method == Deflate {
		fw, err := kflate.NewWriter(&ew.cw, w.level)
		if err != nil {
			return nil, err
		}
		ew.comp = fw
	}
	w.open = true
	return ew, nil
}

// CreateStored starts a stored entry whose CRC-32 and size are known
// before its data: the local header carries them and no descriptor
// follows. Close fails with ErrMismatch when the data written differs.
func (w *Writer) CreateStored(h Header, crc uint32, size int64) (*EntryWriter, error) {
	if err := w.check(h); err != nil {
		return nil, err
	}
	if h.Method != Store {
		return nil, fmt.Errorf("zipw: %s: CreateStored with method %d", h.Name, h.Method)
	}
	e := &entry{Header: h, crc: crc, csize: size, usize: size, offset: w.off, localZip64: size >= u32max}
	if err := w.writeLocal(e); err != nil {
		return nil, err
	}
	w.open = true
	return &EntryWriter{w: w, e: e, crc: crc32.NewIEEE(), cw: countWriter{w: w}, sized: true}, nil
}

// Write hashes p into the CRC and compresses or stores it.
func (ew *EntryWriter) Write(p []byte) (int, error) {
	ew.crc.Write(p)
	ew.usize += int64(len(p))
	if ew.comp != nil {
		return ew.comp.Write(p)
	}
	return ew.cw.Write(p)
}

// Close finishes the entry and writes its data descriptor.
func (ew *EntryWriter) Close() error {
	if ew.comp != nil {
		if err := ew.comp.Close(); err != nil {
			return err
		}
	}
	e := ew.e
	if ew.sized {
		if ew.usize != e.usize || ew.crc.Sum32() != e.crc {
			return fmt.Errorf("zipw: %s: %w: %d bytes, CRC-32 %08x; announced %d, %08x", e.Name, ErrMismatch, ew.usize, ew.crc.Sum32(), e.usize, e.crc)
		}
		ew.w.dir = append(ew.w.dir, e)
		ew.w.open = false
		return nil
	}
	e.crc, e.usize, e.csize = ew.crc.Sum32(), ew.usize, ew.cw.n
	if !e.localZip64 && (e.usize >= u32max || e.csize >= u32max) {
		return fmt.Errorf("zipw: %s: %w", e.Name, ErrTooLarge)
	}
	var b buf
	b.u32(sigDescriptor)
	b.u32(e.crc)
	if e.localZip64 {
		b.u64(uint64(e.csize))
		b.u64(uint64(e.usize))
	} else {
		b.u32(uint32(e.csize))
		b.u32(uint32(e.usize))
	}
	if err := ew.w.write(b); err != nil {
		return err
	}
	ew.w.dir = append(ew.w.dir, e)
	ew.w.open = false
	return nil
}

// CRC32 returns the CRC of the bytes written so far.
func (ew *EntryWriter) CRC32() uint32 { return ew.crc.Sum32() }

// CompressedSize returns the compressed bytes written so far.
func (ew *EntryWriter) CompressedSize() int64 { return ew.cw.n }
