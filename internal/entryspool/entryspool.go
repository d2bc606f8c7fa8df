// Package entryspool keeps a document's decoded entries in a file, to be
// read back in order without decoding the XML again. unpack's survey of a
// Resource Dump decodes every manifest before any package is staged; it
// spools the entries, and staging reads them from the spool instead of
// decoding the same manifest a second time (encoding/xml is the largest
// share of unpack's CPU for small files).
//
// A spool is a sequence of records, each a uvarint length and that many
// bytes (the entry's own binary form: resourcesync.URL.AppendBinary), and a trailer: an empty record, the number of entries, the CRC-32
// of every record before it (lengths and bytes) and the source, a hash of
// what the entries were decoded from. Open checks the source and the CRC,
// so that a spool of other bytes or a damaged one is told before any
// entry is read; Next returns io.EOF only once the count checked out, so
// a spool cut short under it is an error, never a shorter list of
// entries.
package entryspool

import (
	"bufio"
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"

	"github.com/rsdump/rsdump/internal/extsort"
)

// Record is what a spool holds: a type whose pointer gives its binary
// form and reads it back (resourcesync.URL, a document's entry).
type Record[T any] interface {
	*T
	encoding.BinaryAppender
	encoding.BinaryUnmarshaler
}

// maxRecord bounds one entry's record, as the decoder bounds the input
// read for one entry, so that a damaged length cannot ask for gigabytes.
const maxRecord = 16 << 20

// Writer spools entries to a new file.
type Writer[T any, P Record[T]] struct {
	f    *os.File
	w    *bufio.Writer
	crc  hash.Hash32
	n    int64
	size int64 // bytes written
	buf  []byte
	err  error
}

// Create starts a spool in dir, named by pattern as os.CreateTemp takes
// it, so that whoever clears dir can find what a killed process left.
func Create[T any, P Record[T]](dir, pattern string) (*Writer[T, P], error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &Writer[T, P]{f: f, w: bufio.NewWriterSize(f, 64<<10), crc: crc32.NewIEEE()}, nil
}

// Name is the spool's file name.
func (w *Writer[T, P]) Name() string { return w.f.Name() }

// Add appends an entry. An error sticks and is returned by Close.
func (w *Writer[T, P]) Add(v T) {
	if w.err != nil {
		return
	}
	var err error
	w.buf, err = P(&v).AppendBinary(w.buf[:0])
	switch {
	case err != nil:
		w.err = fmt.Errorf("entry %d: %w", w.n+1, err)
		return
	case len(w.buf) > maxRecord:
		w.err = fmt.Errorf("entry %d: %d bytes, more than a spool record holds", w.n+1, len(w.buf))
		return
	}
	w.n++
	var l [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(l[:], uint64(len(w.buf)))
	w.crc.Write(l[:k])
	w.crc.Write(w.buf)
	w.w.Write(l[:k])
	_, w.err = w.w.Write(w.buf)
	w.size += int64(k + len(w.buf))
}

// Size is the number of bytes of entries written so far.
func (w *Writer[T, P]) Size() int64 { return w.size }

// Source identifies what a spool's entries were decoded from: unpack
// gives the SHA-256 of the manifest's bytes.
type Source [32]byte

// trailerSize is the size of the trailer: the empty record, the count,
// the CRC-32 and the source.
const trailerSize = 1 + 8 + 4 + 32

// Close writes the trailer, naming src as what the entries were decoded
// from, and closes the file. On an error the file is removed.
func (w *Writer[T, P]) Close(src Source) error {
	if w.err == nil {
		t := binary.LittleEndian.AppendUint64([]byte{0}, uint64(w.n))
		t = binary.LittleEndian.AppendUint32(t, w.crc.Sum32())
		w.w.Write(append(t, src[:]...))
		w.err = w.w.Flush()
	}
	if err := w.f.Close(); w.err == nil {
		w.err = err
	}
	if w.err != nil {
		os.Remove(w.f.Name())
	}
	return w.err
}

// Abort closes and removes the spool.
func (w *Writer[T, P]) Abort() {
	w.f.Close()
	os.Remove(w.f.Name())
}

// Reader reads a spool's entries back in order.
type Reader[T any, P Record[T]] struct {
	f       *os.File
	r       *bufio.Reader
	n       int64
	buf     []byte
	eof     bool
	trailer [trailerSize]byte
	left    int64 // bytes before the trailer not yet read
}

// ErrDamaged is wrapped by every error about a spool's content.
var ErrDamaged = errors.New("spool damaged")

// ErrOtherSource is Open's error for a spool whose entries were decoded
// from something other than the source asked for.
var ErrOtherSource = errors.New("spool of another source")

// Open opens the spool at name, if its entries were decoded from src.
func Open[T any, P Record[T]](name string, src Source) (*Reader[T, P], error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	r := &Reader[T, P]{f: f, r: bufio.NewReaderSize(f, 64<<10)}
	fi, err := f.Stat()
	if err == nil {
		r.left = fi.Size() - trailerSize
		_, err = f.ReadAt(r.trailer[:], max(r.left, 0))
	}
	switch {
	case err == nil && r.left >= 0 && Source(r.trailer[13:]) != src:
		err = fmt.Errorf("%s: %w", name, ErrOtherSource)
	case err == io.EOF || err == nil && r.left < 0:
		err = r.damaged("shorter than its trailer")
	case err == nil:
		err = r.checkCRC()
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// checkCRC reads the records once before any is handed out, so that a
// damaged spool is told at Open, when its reader can still decode the
// document instead: a few milliseconds for a package's spool, against
// the seconds of decoding its XML.
func (r *Reader[T, P]) checkCRC() error {
	c := crc32.NewIEEE()
	if _, err := io.Copy(c, io.NewSectionReader(r.f, 0, r.left)); err != nil {
		return err
	}
	if c.Sum32() != binary.LittleEndian.Uint32(r.trailer[9:]) {
		return r.damaged("CRC-32 differs from the trailer's")
	}
	return nil
}

// Next returns the next entry, or io.EOF after the last one once the
// trailer has been checked.
func (r *Reader[T, P]) Next() (T, error) {
	var zero T
	if r.eof {
		return zero, io.EOF
	}
	if r.left == 0 {
		return zero, r.end()
	}
	l, k, err := r.length()
	switch {
	case err != nil:
		return zero, r.damaged("entry %d: %v", r.n+1, noEOF(err))
	case l == 0 || l > maxRecord || int64(l)+int64(k) > r.left:
		return zero, r.damaged("entry %d: a record of %d bytes, %d left before the trailer", r.n+1, l, r.left)
	}
	r.left -= int64(l) + int64(k)
	if cap(r.buf) < int(l) {
		r.buf = make([]byte, l)
	}
	r.buf = r.buf[:l]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		return zero, r.damaged("entry %d: %v", r.n+1, noEOF(err))
	}
	r.n++
	var v T
	if err := P(&v).UnmarshalBinary(r.buf); err != nil {
		return zero, r.damaged("entry %d: %v", r.n, err)
	}
	return v, nil
}

// end checks the trailer's count against the entries read (Open checked
// its CRC).
func (r *Reader[T, P]) end() error {
	t := r.trailer[:]
	switch {
	case t[0] != 0:
		return r.damaged("no trailer")
	case binary.LittleEndian.Uint64(t[1:]) != uint64(r.n):
		return r.damaged("%d entries, the trailer says %d", r.n, binary.LittleEndian.Uint64(t[1:]))
	}
	r.eof = true
	return io.EOF
}

// length reads a record's length, a uvarint, and says how many bytes it
// took.
func (r *Reader[T, P]) length() (l uint64, k int, err error) {
	for shift := 0; k < binary.MaxVarintLen64; shift += 7 {
		c, err := r.r.ReadByte()
		if err != nil {
			return 0, k, err
		}
		k++
		l |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return l, k, nil
		}
	}
	return 0, k, errors.New("record length overflows")
}

func (r *Reader[T, P]) damaged(format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", r.f.Name(), ErrDamaged, fmt.Sprintf(format, args...))
}

// Close closes the spool's file.
func (r *Reader[T, P]) Close() error { return r.f.Close() }

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Codec stores entries in the run files of an external sort
// (internal/extsort) as a spool's records: a uvarint length and that many
// bytes, every field of the entry kept. An entry the encoding refuses (a
// time whose zone offset has no binary form, which no parsed document
// gives) is stored as an empty record, which Read refuses: it is never
// read back as another entry.
func Codec[T any, P Record[T]]() extsort.Codec[T] {
	return extsort.Codec[T]{Append: appendRecord[T, P], Read: readRecord[T, P]}
}

func appendRecord[T any, P Record[T]](b []byte, v *T) []byte {
	rec, err := P(v).AppendBinary(nil)
	if err != nil || len(rec) > maxRecord {
		return append(b, 0)
	}
	return append(binary.AppendUvarint(b, uint64(len(rec))), rec...)
}

func readRecord[T any, P Record[T]](r *bufio.Reader) (T, error) {
	var zero T
	l, err := binary.ReadUvarint(r)
	switch {
	case err == io.EOF:
		return zero, io.EOF
	case err != nil:
		return zero, err
	case l == 0:
		return zero, fmt.Errorf("%w: an entry that could not be encoded", ErrDamaged)
	case l > maxRecord:
		return zero, fmt.Errorf("%w: a record of %d bytes", ErrDamaged, l)
	}
	b := make([]byte, l)
	if _, err := io.ReadFull(r, b); err != nil {
		return zero, noEOF(err)
	}
	var v T
	if err := P(&v).UnmarshalBinary(b); err != nil {
		return zero, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	return v, nil
}
