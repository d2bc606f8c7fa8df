// Package zipw writes ZIP archives the way pack needs them: entries whose
// CRC and sizes are already known (compressed in parallel elsewhere) are
// appended raw, large entries are streamed with a data descriptor, ZIP64
// records appear exactly where a field overflows, and the entry being
// written can be abandoned (Mark/Rollback) when its source changes under it.
//
// archive/zip is not used for writing because its central directory always
// carries all three ZIP64 fields for a large entry (7-Zip reports "Headers
// Error", golang/go#23572) and because it cannot drop an entry.
package zipw

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Compression methods.
const (
	Store   uint16 = 0
	Deflate uint16 = 8
)

const (
	sigLocal      = 0x04034b50
	sigCentral    = 0x02014b50
	sigEnd        = 0x06054b50
	sigEnd64      = 0x06064b50
	sigEnd64Loc   = 0x07064b50
	sigDescriptor = 0x08074b50

	flagDescriptor = 0x8
	flagUTF8       = 0x800

	version20 = 20
	version45 = 45
	creator   = 3 << 8 // Unix

	u16max = 1<<16 - 1
	u32max = 1<<32 - 1

	extraZip64   = 0x0001
	extraExtTime = 0x5455
)

// ErrTooLarge is returned when a streamed entry outgrows the size announced
// when it was created: its local header lacks the ZIP64 fields it needs.
var ErrTooLarge = errors.New("zip entry larger than announced")

// Header describes an entry.
type Header struct {
	Name     string
	Modified time.Time
	Method   uint16
	Mode     os.FileMode // permission bits; regular file assumed
}

type entry struct {
	Header
	flags      uint16
	crc        uint32
	csize      int64
	usize      int64
	offset     int64
	localZip64 bool
}

// Writer writes a ZIP archive to an io.Writer. It is not safe for
// concurrent use.
type Writer struct {
	bw     *bufio.Writer
	sink   io.Writer
	off    int64
	dir    []*entry
	open   bool // a streamed entry is in progress
	level  int
	closed bool
}

// NewWriter returns a Writer; level is the Deflate level for streamed
// entries.
func NewWriter(w io.Writer, level int) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, 1<<20), sink: w, level: level}
}

// Offset returns the number of bytes written so far, buffered or not.
func (w *Writer) Offset() int64 { return w.off }

// Entries returns the number of entries written.
func (w *Writer) Entries() int { return len(w.dir) }

func (w *Writer) write(p []byte) error {
	n, err := w.bw.Write(p)
	w.off += int64(n)
	return err
}

// Mark is a point an archive can be rolled back to.
type Mark struct {
	off     int64
	entries int
}

// Mark flushes buffered bytes to the underlying writer and returns the
// current position, so that a caller hashing the underlying stream can
// snapshot its hashes at exactly that point.
func (w *Writer) Mark() (Mark, error) {
	if w.open {
		return Mark{}, errors.New("zipw: mark inside an open entry")
	}
	return Mark{w.off, len(w.dir)}, w.bw.Flush()
}

// Rollback forgets everything written after m. Buffered bytes are dropped;
// the caller must truncate the underlying file to m's offset and restore
// its own hash state.
func (w *Writer) Rollback(m Mark) {
	w.bw.Reset(w.sink)
	w.off = m.off
	w.dir = w.dir[:m.entries]
	w.open = false
}

// MarkOffset returns the archive offset of m.
func (m Mark) Offset() int64 { return m.off }

// WriteRaw appends an entry whose data is already compressed with
// h.Method, copying exactly csize bytes from data.
func (w *Writer) WriteRaw(h Header, crc uint32, csize, usize int64, data io.Reader) error {
	if err := w.check(h); err != nil {
		return err
	}
	e := &entry{Header: h, crc: crc, csize: csize, usize: usize, offset: w.off}
	e.localZip64 = csize >= u32max || usize >= u32max
	if err := w.writeLocal(e); err != nil {
		return err
	}
	n, err := io.CopyN(w.bw, data, csize)
	w.off += n
	if err != nil {
		return fmt.Errorf("zipw: %s: copying data: %w", h.Name, err)
	}
	w.dir = append(w.dir, e)
	return nil
}

// WriteRawBytes is WriteRaw for data already in memory. Large data goes
// straight to the underlying writer instead of through the buffer: one
// copy fewer.
func (w *Writer) WriteRawBytes(h Header, crc uint32, usize int64, data []byte) error {
	if err := w.check(h); err != nil {
		return err
	}
	csize := int64(len(data))
	e := &entry{Header: h, crc: crc, csize: csize, usize: usize, offset: w.off}
	e.localZip64 = csize >= u32max || usize >= u32max
	if err := w.writeLocal(e); err != nil {
		return err
	}
	if len(data) < w.bw.Available() {
		if err := w.write(data); err != nil {
			return err
		}
	} else if err := w.writeDirect(data); err != nil {
		return fmt.Errorf("zipw: %s: %w", h.Name, err)
	}
	w.dir = append(w.dir, e)
	return nil
}

func (w *Writer) writeDirect(p []byte) error {
	if err := w.bw.Flush(); err != nil {
		return err
	}
	n, err := w.sink.Write(p)
	w.off += int64(n)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite // as bufio.Writer reports it
	}
	return err
}

func (w *Writer) check(h Header) error {
	switch {
	case w.closed:
		return errors.New("zipw: write after close")
	case w.open:
		return errors.New("zipw: previous entry not closed")
	case h.Name == "" || len(h.Name) > u16max:
		return fmt.Errorf("zipw: invalid entry name length %d", len(h.Name))
	case h.Method != Store && h.Method != Deflate:
		return fmt.Errorf("zipw: %s: unsupported method %d", h.Name, h.Method)
	}
	return nil
}

func (w *Writer) writeLocal(e *entry) error {
	e.flags |= nameFlags(e.Name)
	version, csize, usize := uint16(version20), uint32(e.csize), uint32(e.usize)
	extra := extTime(e.Modified)
	if e.localZip64 {
		version, csize, usize = version45, u32max, u32max
		extra = append(zip64Extra(e.usize, e.csize, -1, true), extra...)
	}
	crc := e.crc
	if e.flags&flagDescriptor != 0 && !e.localZip64 {
		crc, csize, usize = 0, 0, 0
	}
	date, tm := dosTime(e.Modified)
	var b buf
	b.u32(sigLocal)
	b.u16(version)
	b.u16(e.flags)
	b.u16(e.Method)
	b.u16(tm)
	b.u16(date)
	b.u32(crc)
	b.u32(csize)
	b.u32(usize)
	b.u16(uint16(len(e.Name)))
	b.u16(uint16(len(extra)))
	b = append(b, e.Name...)
	b = append(b, extra...)
	return w.write(b)
}

// nameFlags marks non-ASCII names as UTF-8 so unzip and 7-Zip decode them.
func nameFlags(name string) uint16 {
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			return flagUTF8
		}
	}
	return 0
}

// zip64Extra builds a ZIP64 extended-information field. In a local header
// both sizes are always present; in the central directory only the fields
// whose 32-bit slot overflowed (APPNOTE 4.5.3), so that strict readers
// such as 7-Zip accept it. offset < 0 means "not included".
func zip64Extra(usize, csize, offset int64, local bool) []byte {
	var b buf
	if local {
		b.u64(uint64(usize))
		b.u64(uint64(csize))
	} else {
		if usize >= u32max {
			b.u64(uint64(usize))
		}
		if csize >= u32max {
			b.u64(uint64(csize))
		}
		if offset >= u32max {
			b.u64(uint64(offset))
		}
	}
	var out buf
	out.u16(extraZip64)
	out.u16(uint16(len(b)))
	return append(out, b...)
}

// extTime is the "UT" extended timestamp: the exact UTC mtime, which DOS
// time (local, 2-second resolution) cannot carry.
func extTime(t time.Time) []byte {
	sec := t.Unix()
	if t.IsZero() || sec < 0 || sec > u32max {
		return nil
	}
	var b buf
	b.u16(extraExtTime)
	b.u16(5)
	b = append(b, 1) // modification time present
	b.u32(uint32(sec))
	return b
}

func dosTime(t time.Time) (date, tm uint16) {
	t = t.UTC()
	if t.Year() < 1980 {
		return 1<<5 | 1, 0 // 1980-01-01, the earliest DOS date
	}
	if t.Year() > 2107 {
		return uint16(127<<9 | 12<<5 | 31), uint16(23<<11 | 59<<5 | 29)
	}
	date = uint16(t.Day() + int(t.Month())<<5 + (t.Year()-1980)<<9)
	tm = uint16(t.Second()/2 + t.Minute()<<5 + t.Hour()<<11)
	return date, tm
}

type buf []byte

func (b *buf) u16(v uint16) { *b = binary.LittleEndian.AppendUint16(*b, v) }
func (b *buf) u32(v uint32) { *b = binary.LittleEndian.AppendUint32(*b, v) }
func (b *buf) u64(v uint64) { *b = binary.LittleEndian.AppendUint64(*b, v) }
