// Package ziprange finds and reads entries of a ZIP archive through an
// io.ReaderAt, reading as few bytes as it can: the end records, a window
// of the central directory where an entry should be, the entry's local
// header and its data. It is for repairing one file of a synced tree from
// a remote package of several GiB by HTTP Range requests
// (transfer.Ranges), where archive/zip would first read the whole central
// directory: about 1 MB for a package of 10,000 entries.
//
// Nothing read is trusted. Every offset, size and count is checked
// against the archive's size and the directory's bounds before it is
// used; reads and allocations are bounded by fixed sizes and by the ZIP
// format's 16-bit lengths, never by a count or size the archive gives;
// an entry's bytes are checked against its CRC-32 and size as they are
// read.
//
// Its parse of the end records (ReadEnd), the records' signatures and
// lengths and LocalName are pkgread's too, whose layout check reads a
// package's end records where archive/zip found its directory.
package ziprange

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The signatures of the ZIP records and the lengths of their fixed parts
// (APPNOTE 4.3), for every reader of them (pkgread's layout check too).
const (
	SigLocal    = 0x04034b50
	SigCentral  = 0x02014b50
	SigEnd      = 0x06054b50
	SigEnd64    = 0x06064b50
	SigEnd64Loc = 0x07064b50

	LocalLen    = 30
	CentralLen  = 46
	EndLen      = 22
	End64LocLen = 20
	End64Len    = 56
)

// The flags of encrypted entries: traditional or strong encryption, and
// local headers masked by an encrypted central directory.
const flagsEncrypted = 0x1 | 0x40 | 0x2000

// Compression methods Open reads.
const (
	Store   uint16 = 0
	Deflate uint16 = 8
)

const (
	// tailGuess is the first read of the archive's end: the end record
	// with a short comment and the ZIP64 end records. Only a longer
	// comment (or bytes after the end record) makes ReadEnd read as far
	// back as archive/zip looks for the end record, maxTail: the most
	// the end can take (the ZIP64 end records, the end record and the
	// longest comment, 65,633 bytes) and a little more, so that both find
	// the same record.
	tailGuess = 4 << 10
	maxTail   = 65 << 10

	smallDir    = 256 << 10 // a directory this small is read whole, in one read
	window      = 64 << 10  // what one step of the search reads
	maxWindows  = 8         // steps before the search gives up on a name
	maxSearched = 16        // more names than this read the whole directory once
)

// ErrNotFound is wrapped by Find's error for a name the central directory
// does not hold.
var ErrNotFound = errors.New("not in the archive's central directory")

// Entry is an entry as the central directory describes it, ZIP64 fields
// applied.
type Entry struct {
	Name             string
	Method           uint16
	Flags            uint16
	CRC32            uint32
	CompressedSize   uint64
	UncompressedSize uint64
	HeaderOffset     int64 // where the entry's local header is
}

// Dir is an archive's central directory as its end records place it. It
// is safe for concurrent use when its io.ReaderAt is.
type Dir struct {
	ra    io.ReaderAt
	off   int64 // the central directory's offset
	len   int64 // and length
	count uint64
	zip64 bool // the count is the ZIP64 end record's, not a 16-bit one

	small, window int64 // smallDir and window; tests make them small
}

// Count is the number of entries the end records give.
func (d *Dir) Count() uint64 { return d.count }

// ReadDir reads the end records of the archive of size bytes that ra
// reads: only its tail, the end of central directory record and, when
// the archive has them, the ZIP64 end locator and record (ReadEnd). It
// checks that the central directory they place lies within the archive,
// before them.
func ReadDir(ra io.ReaderAt, size int64) (*Dir, error) {
	e, err := ReadEnd(ra, size)
	if err != nil {
		return nil, err
	}
	d := &Dir{ra: ra, small: smallDir, window: window}
	return d, d.readEnd(e)
}

// End is where an archive's end records are and what they hold, as they
// are stored: the one parse of them, which ReadDir and pkgread's layout
// check each judge by their own rules.
type End struct {
	Off     int64  // of the end of central directory record
	Record  []byte // its fixed EndLen bytes
	Comment int    // the length of the comment after it
	// Off64 is the ZIP64 end record's offset, where the locator before
	// the end record points; -1 when there is no locator.
	Off64    int64
	Locator  []byte // the ZIP64 end locator's End64LocLen bytes; nil when none
	Record64 []byte // the ZIP64 end record's End64Len bytes; nil when none
}

// ReadEnd finds the end record where archive/zip finds it, the last
// signature in the archive's last 65 KiB, reading 4 KiB first, and reads
// the ZIP64 end locator before it and the record it points to, if any.
// It fails when there is no end record, when its comment runs past the
// archive's end, or when a locator points where no ZIP64 end record is.
func ReadEnd(ra io.ReaderAt, size int64) (End, error) {
	if size < EndLen {
		return End{}, fmt.Errorf("not a ZIP archive: %d bytes, fewer than an end record", size)
	}
	t, err := readTail(ra, size, tailGuess)
	if err != nil {
		return End{}, err
	}
	i := lastEnd(t.b)
	if i < 0 && t.off > 0 && len(t.b) < maxTail {
		if t, err = readTail(ra, size, maxTail); err != nil {
			return End{}, err
		}
		i = lastEnd(t.b)
	}
	if i < 0 {
		return End{}, fmt.Errorf("not a ZIP archive: no end of central directory record in its last %d bytes", len(t.b))
	}
	e := End{Off: t.off + int64(i), Record: t.b[i : i+EndLen], Comment: int(u16(t.b[i+20:])), Off64: -1}
	if i+EndLen+e.Comment > len(t.b) {
		return e, fmt.Errorf("the end record's comment of %d bytes runs past the archive's end", e.Comment)
	}
	if e.Off < End64LocLen {
		return e, nil
	}
	loc, err := t.at(e.Off-End64LocLen, End64LocLen)
	if err != nil {
		return e, fmt.Errorf("ZIP64 end locator: %w", err)
	}
	if u32(loc) != SigEnd64Loc {
		return e, nil
	}
	e.Locator, e.Off64 = loc, int64(u64(loc[8:]))
	e.Record64, err = readEnd64(t, loc, e.Off-End64LocLen)
	return e, err
}

// tail is the bytes read at the archive's end.
type tail struct {
	ra  io.ReaderAt
	off int64
	b   []byte
}

func readTail(ra io.ReaderAt, size int64, n int64) (tail, error) {
	n = min(n, size)
	t := tail{ra: ra, off: size - n, b: make([]byte, n)}
	if err := readAt(ra, t.b, t.off); err != nil {
		return t, fmt.Errorf("reading the archive's last %d bytes: %w", n, err)
	}
	return t, nil
}

// at returns the n bytes at off, from the tail when it holds them.
func (t tail) at(off int64, n int) ([]byte, error) {
	if off >= t.off {
		return t.b[off-t.off : off-t.off+int64(n)], nil
	}
	b := make([]byte, n)
	if err := readAt(t.ra, b, off); err != nil {
		return nil, fmt.Errorf("reading %d bytes at offset %d: %w", n, off, err)
	}
	return b, nil
}

// lastEnd is the offset in b of the last end record signature, -1 if
// there is none. The end record is where archive/zip finds it, so that
// both read the same entries of an archive whose comment holds a
// signature.
func lastEnd(b []byte) int {
	return bytes.LastIndex(b[:len(b)-EndLen+4], []byte("PK\x05\x06"))
}

// readEnd takes from the end records where the directory is, and checks
// that it lies before them.
func (d *Dir) readEnd(e End) error {
	count, dlen, doff := uint64(u16(e.Record[10:])), uint64(u32(e.Record[12:])), uint64(u32(e.Record[16:]))
	limit := e.Off // where the directory must end
	if z := e.Record64; z != nil {
		limit, d.zip64 = e.Off64, true
		count = u64(z[32:]) // a count under 0xffff can still be the rest of a larger one
		if dlen == 0xffffffff {
			dlen = u64(z[40:])
		}
		if doff == 0xffffffff {
			doff = u64(z[48:])
		}
	}
	if doff > uint64(limit) || dlen > uint64(limit)-doff {
		return fmt.Errorf("the end records place the central directory at offset %d, %d bytes long, past the end records at offset %d", doff, dlen, limit)
	}
	if count > dlen/CentralLen {
		return fmt.Errorf("the end records count %d entries, more than a central directory of %d bytes holds", count, dlen)
	}
	d.off, d.len, d.count = int64(doff), int64(dlen), count
	return nil
}

// readEnd64 reads the ZIP64 end record that the locator loc, at locOff,
// points to.
func readEnd64(t tail, loc []byte, locOff int64) ([]byte, error) {
	zoff := u64(loc[8:])
	if locOff < End64Len || zoff > uint64(locOff-End64Len) {
		return nil, fmt.Errorf("the ZIP64 end locator points to offset %d, where no ZIP64 end record fits before it at offset %d", zoff, locOff)
	}
	z, err := t.at(int64(zoff), End64Len)
	if err != nil {
		return nil, fmt.Errorf("ZIP64 end record: %w", err)
	}
	if u32(z) != SigEnd64 {
		return nil, fmt.Errorf("no ZIP64 end record at offset %d, where the locator points", zoff)
	}
	return z, nil
}

// readAt fills p with the bytes at off. A read that fills p is no error,
// even when it ends the input and ra says io.EOF, as ReaderAt may.
func readAt(ra io.ReaderAt, p []byte, off int64) error {
	n, err := ra.ReadAt(p, off)
	switch {
	case n == len(p):
		return nil
	case err == nil || err == io.EOF:
		return io.ErrUnexpectedEOF
	}
	return err
}

func u16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
func u32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
func u64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }
