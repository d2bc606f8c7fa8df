package pkgread

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"sort"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/ziprange"
)

// Bytes that no entry accounts for are where a second archive hides: a
// streaming reader (bsdtar from a pipe) meets local headers in a gap, in a
// prefix or just before the central directory that archive/zip never
// reads. So a package must be tiled: from offset 0, each entry's local
// header, data and (when flagged) data descriptor, then the central
// directory, the ZIP64 end records when present and the end record, to
// the last byte. The end records must agree with each other and with the
// directory archive/zip read: counts and sizes that lie, or more than one
// disk, make readers see different archives.

const sigDescriptor = 0x08074b50

// zipEnd is what the end records say, where they are.
type zipEnd struct {
	ziprange.End       // the records as stored, where they are
	dirStart     int64 // the central directory, as archive/zip read it
	dirSize      int64
	records      uint64
}

// checkTiling reports bytes that no entry, directory record or end record
// accounts for, and end records that disagree.
func (p *Package) checkTiling() {
	end, err := p.readEnd()
	if err != nil {
		p.report(finding.Finding{Severity: finding.Error, Code: finding.CheckZip, Msg: err.Error()})
		return
	}
	for _, e := range p.checkEndRecords(end) {
		p.report(finding.Finding{Severity: finding.Error, Code: finding.CheckZip, Msg: e})
	}
	ranges, problems := p.entryRanges()
	for _, f := range problems {
		p.report(f)
	}
	for _, gap := range gaps(ranges, end.dirStart) {
		p.report(finding.Finding{Severity: finding.Error, Code: finding.CheckZip, Msg: gap})
	}
}

// baseOffset is where archive/zip found the archive to start (non-zero
// when a prefix shifts every offset), read like headerOffset.
func baseOffset(zr *zip.Reader) int64 {
	v := reflect.ValueOf(zr).Elem().FieldByName("baseOffset")
	if !v.IsValid() || v.Kind() != reflect.Int64 {
		return 0
	}
	return v.Int()
}

// readEnd reads the end records where archive/zip finds them
// (ziprange.ReadEnd), and takes from them where the central directory is
// and how many entries it holds, by archive/zip's rules: a ZIP64 value
// replaces a saturated one.
func (p *Package) readEnd() (zipEnd, error) {
	raw, err := ziprange.ReadEnd(p.ra, p.size)
	if err != nil {
		return zipEnd{End: raw}, err
	}
	e := zipEnd{End: raw}
	r := raw.Record
	e.records = uint64(binary.LittleEndian.Uint16(r[10:]))
	e.dirSize = int64(binary.LittleEndian.Uint32(r[12:]))
	dirOff := int64(binary.LittleEndian.Uint32(r[16:]))
	if r64 := raw.Record64; r64 != nil {
		if e.records == 0xffff {
			e.records = binary.LittleEndian.Uint64(r64[32:])
		}
		if e.dirSize == 0xffffffff {
			e.dirSize = int64(binary.LittleEndian.Uint64(r64[40:]))
		}
		if dirOff == 0xffffffff {
			dirOff = int64(binary.LittleEndian.Uint64(r64[48:]))
		}
	}
	e.dirStart = baseOffset(p.zr) + dirOff
	return e, nil
}

// checkEndRecords compares the end records with each other and with the
// directory archive/zip read, and checks that nothing is hidden between
// them or after them.
func (p *Package) checkEndRecords(e zipEnd) []string {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	r := e.Record
	entries := uint64(len(p.zr.File))
	disk, dirDisk := binary.LittleEndian.Uint16(r[4:]), binary.LittleEndian.Uint16(r[6:])
	here, total := binary.LittleEndian.Uint16(r[8:]), binary.LittleEndian.Uint16(r[10:])
	if disk != 0 || dirDisk != 0 {
		add("the end record gives disk %d, directory disk %d; a package is one disk", disk, dirDisk)
	}
	if here != total {
		add("the end record counts %d entries on this disk and %d in all", here, total)
	}
	if e.records != entries {
		add("the end records count %d entries, the central directory holds %d", e.records, entries)
	}
	if from := e.Off + ziprange.EndLen + int64(e.Comment); !p.zeros(from, p.size) {
		// bsdtar writing to a pipe pads with zeros to its block size;
		// anything else there is hidden.
		add("bytes %d-%d, after the end record and its comment, belong to nothing", from, p.size-1)
	}
	next := e.Off
	if e.Record64 != nil {
		errs = append(errs, p.checkEnd64(e)...)
		next = e.Off64
	}
	if dirEnd := e.dirStart + e.dirSize; dirEnd != next {
		add("the central directory ends at offset %d but the end records start at %d", dirEnd, next)
	}
	if err := p.walkDirectory(e); err != nil {
		errs = append(errs, err.Error())
	}
	return errs
}

// checkEnd64 checks the ZIP64 end record and locator: one disk, the same
// counts, size and offset as the plain record where that one is not
// saturated, and the locator right after the record.
func (p *Package) checkEnd64(e zipEnd) []string {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	plain, loc, r := e.Record, e.Locator, e.Record64
	if d, n := binary.LittleEndian.Uint32(loc[4:]), binary.LittleEndian.Uint32(loc[16:]); d != 0 || n != 1 {
		add("the ZIP64 end locator gives directory disk %d of %d disks; a package is one disk", d, n)
	}
	if d, dd := binary.LittleEndian.Uint32(r[16:]), binary.LittleEndian.Uint32(r[20:]); d != 0 || dd != 0 {
		add("the ZIP64 end record gives disk %d, directory disk %d; a package is one disk", d, dd)
	}
	if recEnd := e.Off64 + 12 + int64(binary.LittleEndian.Uint64(r[4:])); recEnd != e.Off-ziprange.End64LocLen {
		add("the ZIP64 end record ends at offset %d, the locator starts at %d", recEnd, e.Off-ziprange.End64LocLen)
	}
	here, total := binary.LittleEndian.Uint64(r[24:]), binary.LittleEndian.Uint64(r[32:])
	size, off := binary.LittleEndian.Uint64(r[40:]), binary.LittleEndian.Uint64(r[48:])
	if here != total || total != e.records {
		add("the ZIP64 end record counts %d entries on this disk and %d in all, the end records %d", here, total, e.records)
	}
	type field struct {
		name        string
		plain, z64  uint64
		saturatedAt uint64
	}
	for _, f := range []field{
		{"directory size", uint64(binary.LittleEndian.Uint32(plain[12:])), size, 0xffffffff},
		{"directory offset", uint64(binary.LittleEndian.Uint32(plain[16:])), off, 0xffffffff},
	} {
		if f.plain != f.saturatedAt && f.plain != f.z64 {
			add("the end record gives %s %d, the ZIP64 end record %d", f.name, f.plain, f.z64)
		}
	}
	return errs
}

// walkDirectory checks that the central records, as many as archive/zip
// read, fill the directory exactly.
func (p *Package) walkDirectory(e zipEnd) error {
	off := e.dirStart
	var h [ziprange.CentralLen]byte
	for i := range p.zr.File {
		if _, err := p.ra.ReadAt(h[:], off); err != nil || binary.LittleEndian.Uint32(h[:]) != ziprange.SigCentral {
			return fmt.Errorf("no central directory record %d at offset %d", i+1, off)
		}
		if d := binary.LittleEndian.Uint16(h[34:]); d != 0 {
			return fmt.Errorf("central directory record %d (%s) starts on disk %d; a package is one disk", i+1, p.zr.File[i].Name, d)
		}
		off += ziprange.CentralLen + int64(binary.LittleEndian.Uint16(h[28:])) + int64(binary.LittleEndian.Uint16(h[30:])) + int64(binary.LittleEndian.Uint16(h[32:]))
	}
	if end := e.dirStart + e.dirSize; off != end {
		return fmt.Errorf("the central directory records end at offset %d, the directory at %d: bytes %d-%d belong to no record", off, end, min(off, end), max(off, end)-1)
	}
	return nil
}

// byteRange is an entry's bytes: local header, data, data descriptor.
type byteRange struct {
	start, end int64
	name       string
}

// tile is an entry's bytes, or why they cannot be told.
type tile struct {
	r   byteRange
	err error
}

// entryRanges returns the bytes of every entry, reporting the entries
// whose data descriptor is missing or disagrees with the central record.
// Entries read as bitstreams were measured then (addSpan).
func (p *Package) entryRanges() ([]byteRange, []finding.Finding) {
	var out []byteRange
	var bad []finding.Finding
	for _, f := range p.zr.File {
		t, ok := p.tiles[f]
		if !ok {
			t.r, t.err = p.entryRange(f)
		}
		if t.err != nil {
			bad = append(bad, finding.Finding{Severity: finding.Error, Code: finding.CheckZip, Path: f.Name, Msg: t.err.Error()})
		}
		if t.r.end > t.r.start {
			out = append(out, t.r)
		}
	}
	clear(p.tiles)
	return out, bad
}

// entryRange is f's local header, data and data descriptor.
func (p *Package) entryRange(f *zip.File) (byteRange, error) {
	data, err := f.DataOffset()
	if err != nil {
		return byteRange{}, fmt.Errorf("local header: %v", err)
	}
	return p.entryRangeAt(f, data)
}

// entryRangeAt is entryRange for an entry whose data offset (a read of its
// local header) is known already.
func (p *Package) entryRangeAt(f *zip.File, data int64) (byteRange, error) {
	start, err := headerOffset(f)
	if err != nil {
		return byteRange{}, err
	}
	end := data + clampInt64(f.CompressedSize64)
	if f.Flags&flagDataDesc != 0 {
		n, err := p.descriptorLen(f, end)
		return byteRange{start, end + n, f.Name}, err
	}
	return byteRange{start, end, f.Name}, nil
}

// descriptorLen is the length of the data descriptor at off: with or
// without its signature, with 4- or 8-byte sizes, whichever form carries
// the central record's sizes. A stored entry's descriptor must
// have its signature: a streaming reader finds the end of stored data by
// looking for it.
func (p *Package) descriptorLen(f *zip.File, off int64) (int64, error) {
	var b [24]byte
	n, _ := p.ra.ReadAt(b[:], off)
	b2 := b[:n]
	// The CRC-32 is compared by the read (checkEnd); the sizes place it.
	matches := func(d []byte, wide bool) bool {
		if wide {
			return len(d) >= 20 && binary.LittleEndian.Uint64(d[4:]) == f.CompressedSize64 && binary.LittleEndian.Uint64(d[12:]) == f.UncompressedSize64
		}
		return len(d) >= 12 && uint64(binary.LittleEndian.Uint32(d[4:])) == f.CompressedSize64 && uint64(binary.LittleEndian.Uint32(d[8:])) == f.UncompressedSize64
	}
	signed := len(b2) >= 4 && binary.LittleEndian.Uint32(b2) == sigDescriptor
	switch {
	case signed && matches(b2[4:], false):
		return 16, nil
	case signed && matches(b2[4:], true):
		return 24, nil
	case f.Method == zip.Store:
		return 0, fmt.Errorf("no data descriptor with its signature and the central record's sizes at offset %d, right after the stored data", off)
	case matches(b2, false):
		return 12, nil
	case matches(b2, true):
		return 20, nil
	}
	return 0, fmt.Errorf("no data descriptor with the central record's sizes at offset %d, right after the data", off)
}

// gaps lists the bytes before the central directory at dirStart that no
// entry covers, and entries that run into the directory. Overlaps between
// entries are CheckLayout's.
func gaps(rs []byteRange, dirStart int64) []string {
	sort.Slice(rs, func(i, j int) bool { return rs[i].start < rs[j].start })
	var out []string
	var at int64
	prev := "the start of the file"
	for _, r := range rs {
		if r.start > at {
			out = append(out, unaccounted(at, r.start, prev, "the local header of "+r.name))
		}
		if r.end > at {
			at, prev = r.end, "the end of "+r.name
		}
	}
	switch {
	case at < dirStart:
		out = append(out, unaccounted(at, dirStart, prev, "the central directory"))
	case at > dirStart && len(rs) > 0:
		out = append(out, fmt.Sprintf("entry bytes run %d bytes into the central directory at offset %d", at-dirStart, dirStart))
	}
	return out
}

func unaccounted(from, to int64, after, before string) string {
	return fmt.Sprintf("bytes %d-%d (%d bytes), between %s and %s, belong to no entry", from, to-1, to-from, after, before)
}

// zeros reports whether bytes [from, to) are all zero (or there are none).
// readEnd found the end record in the last 65 KiB, so they are few.
func (p *Package) zeros(from, to int64) bool {
	if from > to {
		return false
	}
	b := make([]byte, to-from)
	if _, err := p.ra.ReadAt(b, from); err != nil && err != io.EOF {
		return false
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
