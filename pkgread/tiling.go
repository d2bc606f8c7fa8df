package pkgread

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
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
	base         int64 // what the archive's offsets are relative to (directoryAt)
	dirStart     int64 // the central directory, as archive/zip read it
	dirSize      int64
	records      uint64
}

// checkTiling reports bytes that no entry, directory record or end record
// accounts for, and end records that disagree.
func (p *Package) checkTiling() {
	end, err := p.place.end, p.place.endErr
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
	for _, f := range tiled(ranges, end.dirStart) {
		p.report(f)
	}
}

// readEnd reads the end records where archive/zip finds them
// (ziprange.ReadEnd), and takes from them where the central directory is
// and how many entries it holds, by archive/zip's rules: a ZIP64 value
// replaces a saturated one, and the directory lies where directoryAt
// places it.
func (p *Package) readEnd() (zipEnd, error) {
	raw, err := ziprange.ReadEnd(p.ra, p.size)
	e := zipEnd{End: raw}
	if raw.Record == nil {
		return e, err
	}
	r := raw.Record
	e.records = uint64(binary.LittleEndian.Uint16(r[10:]))
	e.dirSize = int64(binary.LittleEndian.Uint32(r[12:]))
	if r64 := raw.Record64; r64 != nil {
		if e.records == 0xffff {
			e.records = binary.LittleEndian.Uint64(r64[32:])
		}
		if e.dirSize == 0xffffffff {
			e.dirSize = int64(binary.LittleEndian.Uint64(r64[40:]))
		}
	}
	e.base, e.dirStart = p.directoryAt(raw)
	return e, err
}

// directoryAt is where archive/zip reads the central directory, and the
// base its offsets are relative to: the file's offset of the archive
// proper, non-zero when a prefix (a self-extractor's stub) shifts it. The
// end records give the directory's offset and size, and the base is what
// is left of their own offset: the ZIP64 end record's when the plain one
// saturates a field and a ZIP64 locator says one disk, else the plain
// one's. A positive base counts only when no central record lies at the
// offset as given (archive/zip's remedy for writers that get it wrong).
// Where archive/zip decides otherwise, its header offsets are not these:
// no local header found from them leads to the data it reads
// (checkLocal), and the package is refused.
func (p *Package) directoryAt(e ziprange.End) (base, dirStart int64) {
	r := e.Record
	records, size, off := binary.LittleEndian.Uint16(r[10:]), uint64(binary.LittleEndian.Uint32(r[12:])), uint64(binary.LittleEndian.Uint32(r[16:]))
	endOff := e.Off
	saturated := records == 0xffff || size == 0xffffffff || off == 0xffffffff
	if loc := e.Locator; saturated && e.Record64 != nil && binary.LittleEndian.Uint32(loc[4:]) == 0 && binary.LittleEndian.Uint32(loc[16:]) == 1 {
		endOff = e.Off64
		size, off = binary.LittleEndian.Uint64(e.Record64[40:]), binary.LittleEndian.Uint64(e.Record64[48:])
	}
	if size > math.MaxInt64/2 || off > math.MaxInt64/2 {
		return 0, math.MaxInt64 // archive/zip refuses the archive
	}
	base = endOff - int64(size) - int64(off)
	if base > 0 && p.sigAt(int64(off), ziprange.SigCentral) {
		base = 0
	}
	return base, base + int64(off)
}

// sigAt says whether the four bytes at off are the signature sig.
func (p *Package) sigAt(off int64, sig uint32) bool {
	var b [4]byte
	_, err := p.ra.ReadAt(b[:], off)
	return err == nil && binary.LittleEndian.Uint32(b[:]) == sig
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
	if p.place.err != nil {
		errs = append(errs, p.place.err.Error())
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

// byteRange is an entry's bytes: local header, data, data descriptor.
type byteRange struct {
	start, end int64
	name       string
	// reported: the entry's local header was reported as not agreeing
	// with the central directory; its bytes are where the central
	// directory places them, and no overlap is reported for them again.
	reported bool
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
	out := make([]byteRange, 0, len(p.zr.File))
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

// entryRange is f's local header, data and data descriptor, the header
// where localAt finds it.
func (p *Package) entryRange(f *zip.File) (byteRange, error) {
	_, start, data, err := p.localAt(f)
	if err != nil {
		return byteRange{}, err
	}
	return p.entryRangeAt(f, start, data)
}

// localFailed keeps the bytes of an entry whose local header was just
// reported, as the central directory and archive/zip place them: the
// tiling check then reports the bytes it leaves out, and nothing about
// the entry again.
func (p *Package) localFailed(f *zip.File) {
	r := byteRange{name: f.Name}
	start, err := p.headerOffset(f)
	data, err2 := f.DataOffset()
	if err == nil && err2 == nil {
		r, _ = p.entryRangeAt(f, start, data)
	}
	r.reported = true
	p.tiles[f] = tile{r: r}
}

// entryRangeAt is entryRange for an entry whose local header (at start)
// and data offset are known already.
func (p *Package) entryRangeAt(f *zip.File, start, data int64) (byteRange, error) {
	end := data + clampInt64(f.CompressedSize64)
	if f.Flags&flagDataDesc != 0 {
		n, err := p.descriptorLen(f, end)
		return byteRange{start: start, end: end + n, name: f.Name}, err
	}
	return byteRange{start: start, end: end, name: f.Name}, nil
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

// tiled reports where the entries' bytes rs do not tile the file from
// offset 0 to the central directory at dirStart, as a streaming reader
// walks them: bytes no entry covers, an entry that starts inside the one
// before it (sharing its data, the trick of non-recursive zip bombs, or
// with its local header where a streaming reader, reading that one to its
// end, never meets it), and entries that run into the directory.
func tiled(rs []byteRange, dirStart int64) []finding.Finding {
	sort.Slice(rs, func(i, j int) bool {
		return rs[i].start < rs[j].start || rs[i].start == rs[j].start && rs[i].name < rs[j].name
	})
	var out []finding.Finding
	zipErr := func(msg string) {
		out = append(out, finding.Finding{Severity: finding.Error, Code: finding.CheckZip, Msg: msg})
	}
	var at int64
	prev := byteRange{name: "the start of the file"}
	after := func() string {
		if prev.end == 0 {
			return prev.name
		}
		return "the end of " + prev.name
	}
	for _, r := range rs {
		switch {
		case r.start > at:
			zipErr(unaccounted(at, r.start, after(), "the local header of "+r.name))
		case r.start < at && !r.reported && !prev.reported:
			out = append(out, finding.Finding{Severity: finding.Error, Code: finding.CheckOverlap, Path: r.name,
				Msg: fmt.Sprintf("the entry's bytes, from its local header at offset %d, start inside those of %s (offsets %d-%d): entries share bytes, or a streaming reader never meets this header", r.start, prev.name, prev.start, prev.end-1)})
		}
		if r.end > at {
			at, prev = r.end, r
		}
	}
	switch {
	case at < dirStart:
		zipErr(unaccounted(at, dirStart, after(), "the central directory"))
	case at > dirStart && len(rs) > 0:
		zipErr(fmt.Sprintf("entry bytes run %d bytes into the central directory at offset %d", at-dirStart, dirStart))
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
