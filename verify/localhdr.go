package verify

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// archive/zip reads each entry's local header to find its data but never
// compares the header with the central directory. A package whose local
// names differ from its central names unpacks one way with tools that read
// the central directory (rsdump, Info-ZIP unzip) and another with tools
// that stream the local headers: a known way to slip a file past a check.
// Python's zipfile, and so resync, refuses such a package; so does verify.
// archive/zip keeps the local header offsets to itself, so they are read
// again here from the central directory, the way archive/zip finds them.

const (
	sigLocal    = 0x04034b50
	sigCentral  = 0x02014b50
	sigEnd      = 0x06054b50
	sigEnd64    = 0x06064b50
	sigLocator  = 0x07064b50
	endLen      = 22
	centralLen  = 46
	localLen    = 30
	maxEndBlock = endLen + 0xffff // the end record and the longest comment
)

// headerOffsets returns the local header offset of the first n records of
// the central directory of the size-byte archive ra, in directory order
// (the order of zip.Reader.File).
func headerOffsets(ra io.ReaderAt, size int64, n int) ([]int64, error) {
	cdOff, base, err := directoryStart(ra, size)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(io.NewSectionReader(ra, base+cdOff, size-base-cdOff))
	offs := make([]int64, n)
	for i := range offs {
		off, err := readCentralOffset(br)
		if err != nil {
			return nil, fmt.Errorf("central directory record %d: %w", i+1, err)
		}
		offs[i] = base + off
	}
	return offs, nil
}

// directoryStart finds the central directory from the end record (or its
// ZIP64 form), with the base offset of data prepended to the archive, as
// archive/zip computes them.
func directoryStart(ra io.ReaderAt, size int64) (cdOff, base int64, err error) {
	endOff, end, err := findEnd(ra, size)
	if err != nil {
		return 0, 0, err
	}
	records := binary.LittleEndian.Uint16(end[10:])
	cdSize := int64(binary.LittleEndian.Uint32(end[12:]))
	cdOff = int64(binary.LittleEndian.Uint32(end[16:]))
	if records == 0xffff || cdSize == 0xffffffff || cdOff == 0xffffffff {
		if end64, ok := findEnd64(ra, endOff); ok {
			var b [56]byte
			if _, err := ra.ReadAt(b[:], end64); err != nil {
				return 0, 0, fmt.Errorf("ZIP64 end of central directory: %w", err)
			}
			if binary.LittleEndian.Uint32(b[:]) != sigEnd64 {
				return 0, 0, errors.New("ZIP64 end of central directory: bad signature")
			}
			endOff = end64
			cdSize = int64(binary.LittleEndian.Uint64(b[40:]))
			cdOff = int64(binary.LittleEndian.Uint64(b[48:]))
		}
	}
	if cdOff < 0 || cdSize < 0 || cdOff > size || cdSize > size {
		return 0, 0, errors.New("central directory offset or size outside the file")
	}
	base = endOff - cdSize - cdOff
	if base > 0 && isCentral(ra, cdOff) {
		base = 0 // a wrong base in the end record; archive/zip does the same
	}
	if base+cdOff < 0 || base+cdOff >= size {
		return 0, 0, errors.New("central directory offset outside the file")
	}
	return cdOff, base, nil
}

// findEnd returns the offset and bytes of the end of central directory
// record: the last signature in the file's tail whose comment fits.
func findEnd(ra io.ReaderAt, size int64) (int64, []byte, error) {
	start := max(0, size-maxEndBlock)
	b := make([]byte, size-start)
	if _, err := ra.ReadAt(b, start); err != nil && err != io.EOF {
		return 0, nil, err
	}
	for i := len(b) - endLen; i >= 0; i-- {
		if binary.LittleEndian.Uint32(b[i:]) != sigEnd {
			continue
		}
		if comment := int(binary.LittleEndian.Uint16(b[i+20:])); i+endLen+comment > len(b) {
			break
		}
		return start + int64(i), b[i : i+endLen], nil
	}
	return 0, nil, errors.New("no end of central directory record")
}

// findEnd64 returns the offset of the ZIP64 end record named by the
// locator just before the end record, if there is one.
func findEnd64(ra io.ReaderAt, endOff int64) (int64, bool) {
	if endOff < 20 {
		return 0, false
	}
	var b [20]byte
	if _, err := ra.ReadAt(b[:], endOff-20); err != nil || binary.LittleEndian.Uint32(b[:]) != sigLocator {
		return 0, false
	}
	off := binary.LittleEndian.Uint64(b[8:])
	return int64(off), off < 1<<62
}

func isCentral(ra io.ReaderAt, off int64) bool {
	var b [4]byte
	_, err := ra.ReadAt(b[:], off)
	return err == nil && binary.LittleEndian.Uint32(b[:]) == sigCentral
}

// readCentralOffset reads one central directory record and returns its
// local header offset, from the ZIP64 extra field when the record's own
// field is saturated.
func readCentralOffset(br *bufio.Reader) (int64, error) {
	var h [centralLen]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return 0, err
	}
	if binary.LittleEndian.Uint32(h[:]) != sigCentral {
		return 0, errors.New("bad signature")
	}
	nameLen := int(binary.LittleEndian.Uint16(h[28:]))
	extraLen := int(binary.LittleEndian.Uint16(h[30:]))
	commentLen := int(binary.LittleEndian.Uint16(h[32:]))
	if _, err := br.Discard(nameLen); err != nil {
		return 0, err
	}
	extra := make([]byte, extraLen)
	if _, err := io.ReadFull(br, extra); err != nil {
		return 0, err
	}
	if _, err := br.Discard(commentLen); err != nil {
		return 0, err
	}
	off := binary.LittleEndian.Uint32(h[42:])
	if off != 0xffffffff {
		return int64(off), nil
	}
	// The ZIP64 field holds, in order, the sizes saturated in the record
	// and then the offset (APPNOTE 4.5.3).
	skip := 0
	for _, at := range []int{24, 20} { // uncompressed, then compressed size
		if binary.LittleEndian.Uint32(h[at:]) == 0xffffffff {
			skip += 8
		}
	}
	for len(extra) >= 4 {
		id, n := binary.LittleEndian.Uint16(extra), int(binary.LittleEndian.Uint16(extra[2:]))
		if n > len(extra)-4 {
			break
		}
		if id == 1 && n >= skip+8 {
			if v := binary.LittleEndian.Uint64(extra[4+skip:]); v < 1<<62 {
				return int64(v), nil
			}
		}
		extra = extra[4+n:]
	}
	return 0, errors.New("saturated header offset without a ZIP64 field")
}

// checkLocal compares the entry's local header with its central record:
// the header must lead to the data archive/zip found, under the same name.
func (r *reading) checkLocal() bool {
	f := r.f
	off := r.p.hdrs[r.p.index[f]]
	b := make([]byte, localLen+len(f.Name))
	if _, err := r.p.ra.ReadAt(b, off); err != nil {
		r.fail(CheckZip, "", "", fmt.Sprintf("local header at offset %d: %v", off, err))
		return false
	}
	data, err := f.DataOffset()
	nameLen := int(binary.LittleEndian.Uint16(b[26:]))
	extraLen := int64(binary.LittleEndian.Uint16(b[28:]))
	switch {
	case binary.LittleEndian.Uint32(b) != sigLocal:
		r.fail(CheckZip, "", "", fmt.Sprintf("no local header at offset %d, where the central directory points", off))
	case err != nil || off+localLen+int64(nameLen)+extraLen != data:
		r.fail(CheckZip, "", "", fmt.Sprintf("the local header at offset %d does not lead to the entry's data", off))
	case nameLen != len(f.Name) || string(b[localLen:]) != f.Name:
		r.fail(CheckZip, f.Name, localName(r.p.ra, off, nameLen), "the local header names the entry differently from the central directory")
	default:
		return true
	}
	return false
}

// localName reads the name in the local header at off, for a message.
func localName(ra io.ReaderAt, off int64, n int) string {
	b := make([]byte, min(n, 1024))
	if _, err := ra.ReadAt(b, off+localLen); err != nil {
		return "?"
	}
	return fmt.Sprintf("%q", b)
}
