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
package ziprange

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

const (
	sigLocal    = 0x04034b50
	sigCentral  = 0x02014b50
	sigEnd      = 0x06054b50
	sigEnd64    = 0x06064b50
	sigEnd64Loc = 0x07064b50

	localLen    = 30
	centralLen  = 46
	endLen      = 22
	end64LocLen = 20
	end64Len    = 56
	maxComment  = 1<<16 - 1

	// The flags of encrypted entries: traditional or strong encryption,
	// and local headers masked by an encrypted central directory.
	flagsEncrypted = 0x1 | 0x40 | 0x2000
)

// Compression methods Open reads.
const (
	Store   uint16 = 0
	Deflate uint16 = 8
)

const (
	// tailGuess is the first read of the archive's end: the end record
	// with a short comment and the ZIP64 end records. Only a longer
	// comment makes ReadDir read the most the end can take, maxTail.
	tailGuess = 4 << 10
	maxTail   = end64Len + end64LocLen + endLen + maxComment

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
// the archive has them, the ZIP64 end locator and record. It checks that
// the central directory they place lies within the archive, before them.
func ReadDir(ra io.ReaderAt, size int64) (*Dir, error) {
	if size < endLen {
		return nil, fmt.Errorf("not a ZIP archive: %d bytes, fewer than an end record", size)
	}
	t, err := readTail(ra, size, tailGuess)
	if err != nil {
		return nil, err
	}
	i := lastEnd(t.b)
	if i < 0 && t.off > 0 && len(t.b) < maxTail {
		if t, err = readTail(ra, size, maxTail); err != nil {
			return nil, err
		}
		i = lastEnd(t.b)
	}
	if i < 0 {
		return nil, fmt.Errorf("not a ZIP archive: no end of central directory record in its last %d bytes", len(t.b))
	}
	if c := int(u16(t.b[i+20:])); i+endLen+c > len(t.b) {
		return nil, fmt.Errorf("the end record's comment of %d bytes runs past the archive's end", c)
	}
	d := &Dir{ra: ra, small: smallDir, window: window}
	return d, d.readEnd(t, t.off+int64(i))
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
	return bytes.LastIndex(b[:len(b)-endLen+4], []byte("PK\x05\x06"))
}

// readEnd reads the end record at endOff and the ZIP64 end records before
// it, if any, and checks where they place the directory.
func (d *Dir) readEnd(t tail, endOff int64) error {
	e := t.b[endOff-t.off:]
	count, dlen, doff := uint64(u16(e[10:])), uint64(u32(e[12:])), uint64(u32(e[16:]))
	limit := endOff // where the directory must end
	if endOff >= end64LocLen {
		loc, err := t.at(endOff-end64LocLen, end64LocLen)
		if err != nil {
			return fmt.Errorf("ZIP64 end locator: %w", err)
		}
		if u32(loc) == sigEnd64Loc {
			z, zoff, err := readEnd64(t, loc, endOff-end64LocLen)
			if err != nil {
				return err
			}
			limit, d.zip64 = zoff, true
			count = u64(z[32:]) // a count under 0xffff can still be the rest of a larger one
			if dlen == 0xffffffff {
				dlen = u64(z[40:])
			}
			if doff == 0xffffffff {
				doff = u64(z[48:])
			}
		}
	}
	if doff > uint64(limit) || dlen > uint64(limit)-doff {
		return fmt.Errorf("the end records place the central directory at offset %d, %d bytes long, past the end records at offset %d", doff, dlen, limit)
	}
	if count > dlen/centralLen {
		return fmt.Errorf("the end records count %d entries, more than a central directory of %d bytes holds", count, dlen)
	}
	d.off, d.len, d.count = int64(doff), int64(dlen), count
	return nil
}

// readEnd64 reads the ZIP64 end record that the locator loc, at locOff,
// points to.
func readEnd64(t tail, loc []byte, locOff int64) ([]byte, int64, error) {
	zoff := u64(loc[8:])
	if locOff < end64Len || zoff > uint64(locOff-end64Len) {
		return nil, 0, fmt.Errorf("the ZIP64 end locator points to offset %d, where no ZIP64 end record fits before it at offset %d", zoff, locOff)
	}
	z, err := t.at(int64(zoff), end64Len)
	if err != nil {
		return nil, 0, fmt.Errorf("ZIP64 end record: %w", err)
	}
	if u32(z) != sigEnd64 {
		return nil, 0, fmt.Errorf("no ZIP64 end record at offset %d, where the locator points", zoff)
	}
	return z, int64(zoff), nil
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
