package ziprange

import (
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/flate"
)

// Open returns a reader of e's uncompressed bytes. It reads e's local
// header and checks that it names e, so that a record that lies about
// where its entry is cannot hand back another entry's bytes; then it
// reads exactly e.CompressedSize bytes after it, which must end before
// the central directory. The reader decompresses no more than
// e.UncompressedSize bytes and one more, and ends with an error naming e
// unless it read exactly e.UncompressedSize bytes whose CRC-32 is e's.
// Encrypted entries and methods other than Store and Deflate are refused.
func (d *Dir) Open(e Entry) (io.ReadCloser, error) {
	switch {
	case e.Flags&flagsEncrypted != 0:
		return nil, fmt.Errorf("%s: the entry is encrypted (flags %#x)", e.Name, e.Flags)
	case e.Method != Store && e.Method != Deflate:
		return nil, fmt.Errorf("%s: compression method %d is not supported", e.Name, e.Method)
	case e.Method == Store && e.CompressedSize != e.UncompressedSize:
		return nil, fmt.Errorf("%s: stored entry of %d bytes has a compressed size of %d", e.Name, e.UncompressedSize, e.CompressedSize)
	}
	off, err := d.dataOffset(e, true)
	if err != nil {
		return nil, err
	}
	r := &reader{name: e.Name, size: e.UncompressedSize, want: e.CRC32, crc: crc32.NewIEEE()}
	if s, ok := d.ra.(Sectioned); ok {
		s.Section(off, int64(e.CompressedSize))
	}
	data := io.NewSectionReader(d.ra, off, int64(e.CompressedSize))
	if e.Method == Deflate {
		fr := flate.NewReader(data)
		r.r, r.c = io.LimitReader(fr, int64(min(e.UncompressedSize, 1<<62))+1), fr
	} else {
		r.r = data
	}
	return r, nil
}

// localExtra is the local extra field's length Open allows for when it
// reads an entry's local header and data in one span: zipw writes none,
// or a ZIP64 extra of 20 bytes; other writers, a timestamp or two.
const localExtra = 256

// Sectioned is an io.ReaderAt that reads ahead (over a network, say) and
// can be told the span the next reads fall in, so that it neither reads
// past the entry's data nor in more requests than it must.
type Sectioned interface {
	io.ReaderAt
	Section(off, n int64)
}

// dataOffset reads e's local header and returns where its data starts.
// withData says the data is read next, whole: a Sectioned reader is told
// the span of both (the local header's extra field, whose length only
// the header gives, taken to be at most localExtra bytes), so that one
// request brings the header and the data.
func (d *Dir) dataOffset(e Entry, withData bool) (int64, error) {
	h := e.HeaderOffset
	if h < 0 || h > d.off-LocalLen-int64(len(e.Name)) {
		return 0, fmt.Errorf("%s: local header offset %d is not before the central directory at offset %d", e.Name, h, d.off)
	}
	b := make([]byte, LocalLen+len(e.Name))
	if s, ok := d.ra.(Sectioned); ok {
		span := int64(len(b))
		if withData {
			span = min(d.off-h, span+localExtra+int64(min(e.CompressedSize, 1<<62)))
		}
		s.Section(h, span)
	}
	if err := readAt(d.ra, b, h); err != nil {
		return 0, fmt.Errorf("%s: reading the local header at offset %d: %w", e.Name, h, err)
	}
	if u32(b) != SigLocal {
		return 0, fmt.Errorf("%s: no local header at offset %d", e.Name, h)
	}
	if n := int(u16(b[26:])); n != len(e.Name) || string(b[LocalLen:]) != e.Name {
		return 0, fmt.Errorf("%s: the local header at offset %d names %s", e.Name, h, LocalName(d.ra, h, n))
	}
	if flags := u16(b[6:]); flags&flagsEncrypted != 0 {
		return 0, fmt.Errorf("%s: the local header flags the entry as encrypted (flags %#x)", e.Name, flags)
	}
	if m := u16(b[8:]); m != e.Method {
		return 0, fmt.Errorf("%s: the local header gives compression method %d, the central directory %d", e.Name, m, e.Method)
	}
	off := h + int64(len(b)) + int64(u16(b[28:]))
	if off > d.off || e.CompressedSize > uint64(d.off-off) {
		return 0, fmt.Errorf("%s: its %d bytes of data at offset %d run into the central directory at offset %d", e.Name, e.CompressedSize, off, d.off)
	}
	return off, nil
}

// LocalName reads the name of n bytes in the local header at off, for a
// message.
func LocalName(ra io.ReaderAt, off int64, n int) string {
	b := make([]byte, min(n, 1024))
	if err := readAt(ra, b, off+LocalLen); err != nil {
		return fmt.Sprintf("a name of %d bytes", n)
	}
	return fmt.Sprintf("%q", b)
}

// reader checks an entry's bytes as they are read.
type reader struct {
	name string
	r    io.Reader // the uncompressed bytes, at most size+1 of them
	c    io.Closer // the decompressor, nil for Store
	crc  hash.Hash32
	n    uint64
	size uint64
	want uint32
	err  error
}

func (r *reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.r.Read(p)
	if left := r.size - r.n; uint64(n) > left {
		n, err = int(left), fmt.Errorf("%s: more than the %d bytes the central directory gives", r.name, r.size)
	} else if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", r.name, err)
	}
	r.crc.Write(p[:n])
	r.n += uint64(n)
	if err == io.EOF {
		err = r.check()
	}
	r.err = err
	return n, err
}

// check is the error at the end of the bytes: io.EOF if they are those
// the central directory describes.
func (r *reader) check() error {
	switch {
	case r.n != r.size:
		return fmt.Errorf("%s: %d bytes, the central directory gives %d", r.name, r.n, r.size)
	case r.crc.Sum32() != r.want:
		return fmt.Errorf("%s: CRC-32 %08x, the central directory gives %08x", r.name, r.crc.Sum32(), r.want)
	}
	return io.EOF
}

// Close releases the decompressor.
func (r *reader) Close() error {
	if r.c != nil {
		return r.c.Close()
	}
	return nil
}

// Stored is an entry whose data is its bytes, uncompressed, found where
// its local header says: any span of it can be read on its own (Span),
// as a deflated entry's cannot.
type Stored struct {
	d    *Dir
	name string
	data int64 // where its data starts in the archive
	size int64
}

// OpenStored reads e's local header, checked as Open checks it, and
// returns e as Stored; an error for an entry that is not stored whole
// (deflated, encrypted, or of a compressed size other than its size).
func (d *Dir) OpenStored(e Entry) (*Stored, error) {
	switch {
	case e.Flags&flagsEncrypted != 0:
		return nil, fmt.Errorf("%s: the entry is encrypted (flags %#x)", e.Name, e.Flags)
	case e.Method != Store:
		return nil, fmt.Errorf("%s: the entry is not stored (compression method %d): its bytes cannot be read from the middle", e.Name, e.Method)
	case e.CompressedSize != e.UncompressedSize:
		return nil, fmt.Errorf("%s: stored entry of %d bytes has a compressed size of %d", e.Name, e.UncompressedSize, e.CompressedSize)
	}
	off, err := d.dataOffset(e, false)
	if err != nil {
		return nil, err
	}
	return &Stored{d: d, name: e.Name, data: off, size: int64(e.UncompressedSize)}, nil
}

// Size is the entry's length.
func (s *Stored) Size() int64 { return s.size }

// Span reads the n bytes of the entry from off into p[:n].
func (s *Stored) Span(p []byte, off int64) error {
	n := int64(len(p))
	if off < 0 || n > s.size-off {
		return fmt.Errorf("%s: bytes %d to %d are not in its %d bytes", s.name, off, off+n, s.size)
	}
	if sec, ok := s.d.ra.(Sectioned); ok {
		sec.Section(s.data+off, n)
	}
	if err := readAt(s.d.ra, p, s.data+off); err != nil {
		return fmt.Errorf("%s: bytes %d to %d: %w", s.name, off, off+n, err)
	}
	return nil
}
