package pkgread

import (
	"archive/zip"
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/rsdump/rsdump/internal/ziprange"
)

// Where an entry's local header is, archive/zip keeps to itself: it
// exports only where the data starts (DataOffset), from the header it
// found. pkgread reads the offsets from the central records as
// archive/zip does (the same records, the same base, the same ZIP64
// rule), but trusts none of them on its own. A local header is checked
// only where three readers meet it:
//   - a reader of the central directory: the record's offset
//     (placeEntries);
//   - archive/zip: that header's name and extra field lead exactly to
//     DataOffset, the data archive/zip reads (localAt), so a parse
//     steered to a decoy header elsewhere cannot pass while archive/zip
//     reads the data behind another;
//   - a streaming reader, which walks the local headers from offset 0:
//     each entry starts where the one before it ends (checkTiling).
// A package where they disagree is refused with the entry and offsets.

// placement is where the entries' local headers are, by directory
// position: the first n are known, err says why the rest are not.
type placement struct {
	end    zipEnd
	endErr error // the end records could not be read whole (the layout check reports it)
	hdrs   []int64
	n      int
	last   int   // the entry headerOffset was last asked for
	err    error // no end record, a record not as archive/zip read it, or records that do not fill the directory
}

// placeEntries reads the end records and the central records archive/zip
// read, and keeps each entry's local header offset: 8 bytes an entry,
// read in one pass over the directory when the package is opened, before
// any entry's bytes are, so that a reader of a package still arriving
// (HeaderOffset, Others) knows where each entry starts without reading
// ahead.
func (p *Package) placeEntries() {
	p.place = placement{hdrs: make([]int64, len(p.zr.File))}
	pl := &p.place
	pl.end, pl.endErr = p.readEnd()
	if pl.end.Record == nil {
		// No end record. Without one it could read, archive/zip does
		// without the ZIP64 record: so does placeEntries, and the layout
		// check reports it.
		pl.err = pl.endErr
		return
	}
	off := pl.end.dirStart
	// One buffered pass, as archive/zip reads the directory: a read of
	// each record would cost a PassHasher an early read to check each.
	br := bufio.NewReaderSize(io.NewSectionReader(p.ra, off, max(p.size-off, 0)), 64<<10)
	var b [ziprange.CentralLen]byte
	for i, f := range p.zr.File {
		if _, err := io.ReadFull(br, b[:]); err != nil || binary.LittleEndian.Uint32(b[:]) != ziprange.SigCentral {
			pl.err = fmt.Errorf("no central directory record %d at offset %d", i+1, off)
			return
		}
		if d := binary.LittleEndian.Uint16(b[34:]); d != 0 {
			pl.err = fmt.Errorf("central directory record %d (%s) starts on disk %d; a package is one disk", i+1, f.Name, d)
			return
		}
		nameLen := int(binary.LittleEndian.Uint16(b[28:]))
		rest := nameLen + int(binary.LittleEndian.Uint16(b[30:])) + int(binary.LittleEndian.Uint16(b[32:]))
		if name, err := br.Peek(nameLen); err != nil || string(name) != f.Name {
			pl.err = fmt.Errorf("central directory record %d at offset %d is not the record of %s that archive/zip read", i+1, off, f.Name)
			return
		}
		rec, err := recordedOffset(f, b[:])
		if err != nil {
			pl.err = fmt.Errorf("central directory record %d (%s): %v", i+1, f.Name, err)
			return
		}
		if _, err := br.Discard(rest); err != nil {
			pl.err = fmt.Errorf("central directory record %d (%s) at offset %d: %v", i+1, f.Name, off, err)
			return
		}
		pl.hdrs[i], pl.n = pl.end.base+rec, i+1
		off += ziprange.CentralLen + int64(rest)
	}
	if end := pl.end.dirStart + pl.end.dirSize; off != end {
		pl.err = fmt.Errorf("the central directory records end at offset %d, the directory at %d: bytes %d-%d belong to no record", off, end, min(off, end), max(off, end)-1)
	}
}

// recordedOffset is the local header offset the central record b of f
// gives: its 32-bit field or, when that is saturated, the ZIP64 extra
// field's, which lists the saturated values in order, uncompressed size,
// compressed size, offset (APPNOTE 4.5.3); the first ZIP64 field counts.
func recordedOffset(f *zip.File, b []byte) (int64, error) {
	off := binary.LittleEndian.Uint32(b[42:])
	if off != 0xffffffff {
		return int64(off), nil
	}
	skip := 0
	for _, at := range []int{24, 20} { // the uncompressed size, then the compressed
		if binary.LittleEndian.Uint32(b[at:]) == 0xffffffff {
			skip += 8
		}
	}
	for ex := f.Extra; len(ex) >= 4; {
		id, n := binary.LittleEndian.Uint16(ex), int(binary.LittleEndian.Uint16(ex[2:]))
		if n > len(ex)-4 {
			break
		}
		if id == 0x0001 {
			if n < skip+8 {
				break
			}
			v := binary.LittleEndian.Uint64(ex[4+skip:])
			if v > 1<<62 {
				return 0, fmt.Errorf("ZIP64 local header offset %d", v)
			}
			return int64(v), nil
		}
		ex = ex[4+n:]
	}
	return 0, errors.New("the local header offset is saturated and no ZIP64 field gives it")
}

// headerOffset is where f's local header is, as its central record gives
// it: trusted only once localAt and the tiling agree.
func (p *Package) headerOffset(f *zip.File) (int64, error) {
	pl := &p.place
	i, ok := pl.last+1, true
	if i >= len(p.zr.File) || p.zr.File[i] != f { // not the entry after the last asked for, as in a read in ZIP order
		i, ok = p.index[f]
	}
	pl.last = i
	switch {
	case !ok:
		return 0, fmt.Errorf("%s is not an entry of this package's central directory", f.Name)
	case i >= pl.n:
		return 0, fmt.Errorf("local header not placed: %v", pl.err)
	}
	return pl.hdrs[i], nil
}

// localAt reads f's local header where its central record places it and
// checks that it is where archive/zip found the entry: a local header,
// whose name and extra field end exactly where archive/zip reads the
// data. It returns the header's fixed part and name, its offset and the
// data's.
func (p *Package) localAt(f *zip.File) (h []byte, off, data int64, err error) {
	if off, err = p.headerOffset(f); err != nil {
		return nil, 0, 0, err
	}
	if off < 0 {
		return nil, off, 0, fmt.Errorf("local header at negative offset %d", off)
	}
	h = make([]byte, ziprange.LocalLen+len(f.Name))
	if _, err := p.ra.ReadAt(h, off); err != nil {
		return nil, off, 0, fmt.Errorf("local header at offset %d: %v", off, err)
	}
	if binary.LittleEndian.Uint32(h) != ziprange.SigLocal {
		return nil, off, 0, fmt.Errorf("no local header at offset %d, where the central directory points", off)
	}
	if data, err = f.DataOffset(); err != nil {
		return nil, off, 0, fmt.Errorf("local header: %v", err)
	}
	nameLen, extraLen := int64(binary.LittleEndian.Uint16(h[26:])), int64(binary.LittleEndian.Uint16(h[28:]))
	if end := off + ziprange.LocalLen + nameLen + extraLen; end != data {
		return nil, off, data, fmt.Errorf("the local header at offset %d, where the central directory points, ends at offset %d, but archive/zip reads the entry's data from offset %d: it read another header", off, end, data)
	}
	return h, off, data, nil
}
