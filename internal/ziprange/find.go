package ziprange

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// Order is where the central directory should list name: at pos of its
// total entries. ok is false for a name it does not know.
type Order func(name string) (pos, total int, ok bool)

// ListOrder is the Order of names listed as the central directory should
// list them: for a package rsdump writes, its manifest's paths in
// manifest order (manifest.xml follows them).
func ListOrder(names []string) Order {
	pos := make(map[string]int, len(names))
	for i, n := range names {
		if _, dup := pos[n]; !dup {
			pos[n] = i
		}
	}
	return func(name string) (int, int, bool) {
		i, ok := pos[name]
		return i, len(names), ok
	}
}

// Find returns the entries of the names asked for, and an error naming
// those the directory does not hold, wrapping ErrNotFound. Of a name the
// directory lists twice it returns the record it reads first, not
// necessarily the first listed: the caller checks what it reads (a
// bitstream against its manifest's hash). A directory small enough is
// read whole, in one read. In a larger one each name is searched for,
// guided by hint, in a few windows of the directory where hint places
// it; a name not found so (no hint, one that is wrong, a directory in
// another order), and every name when there are so many that their
// windows would be more than the directory, is looked for in one read of
// the whole directory.
func (d *Dir) Find(names []string, hint Order) (map[string]Entry, error) {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	found := make(map[string]Entry, len(want))
	if hint != nil && d.len > d.small && len(want) <= maxSearched && int64(len(want))*d.window < d.len {
		s := &search{d: d, hint: hint, want: want, found: found, buf: make([]byte, min(d.window, d.len))}
		for _, n := range names {
			if err := s.find(n); err != nil {
				return nil, err
			}
		}
	}
	if len(found) < len(want) {
		if err := d.scan(want, found); err != nil {
			return nil, err
		}
	}
	var missing []error
	for _, n := range names {
		if _, ok := found[n]; !ok && want[n] {
			missing = append(missing, fmt.Errorf("%s: %w", n, ErrNotFound))
			want[n] = false // named once
		}
	}
	return found, errors.Join(missing...)
}

// scan reads the directory from its start until every name wanted is
// found, or to its end, checking that it holds as many records as the
// end records count.
func (d *Dir) scan(want map[string]bool, found map[string]Entry) error {
	br := bufio.NewReaderSize(io.NewSectionReader(d.ra, d.off, d.len), int(min(d.len, smallDir)))
	rec := make([]byte, CentralLen)
	var records uint64
	for pos := int64(0); pos < d.len; {
		if len(found) == len(want) {
			return nil
		}
		at := d.off + pos
		if d.len-pos < CentralLen {
			return fmt.Errorf("central directory record at offset %d: runs past the directory's end at offset %d", at, d.off+d.len)
		}
		rec = rec[:CentralLen]
		if _, err := io.ReadFull(br, rec); err != nil {
			return fmt.Errorf("reading the central directory at offset %d: %w", at, err)
		}
		if u32(rec) != SigCentral {
			return fmt.Errorf("central directory record at offset %d: no record signature", at)
		}
		n := recordLen(rec)
		if int64(n) > d.len-pos {
			return fmt.Errorf("central directory record at offset %d: its name, extra field and comment (%d bytes) run past the directory's end at offset %d", at, n-CentralLen, d.off+d.len)
		}
		rec = slices.Grow(rec, n-CentralLen)[:n]
		if _, err := io.ReadFull(br, rec[CentralLen:]); err != nil {
			return fmt.Errorf("reading the central directory at offset %d: %w", at, err)
		}
		if err := d.keep(rec, at, want, found); err != nil {
			return err
		}
		records++
		pos += int64(n)
	}
	if records != d.count && (d.zip64 || uint16(records) != uint16(d.count)) {
		return fmt.Errorf("the central directory holds %d records, the end records count %d", records, d.count)
	}
	return nil
}

// keep parses the record rec, found at offset at, if it names an entry
// wanted and not yet found.
func (d *Dir) keep(rec []byte, at int64, want map[string]bool, found map[string]Entry) error {
	name := rec[CentralLen : CentralLen+int(u16(rec[28:]))]
	if !want[string(name)] {
		return nil
	}
	if _, dup := found[string(name)]; dup {
		return nil
	}
	e, err := parseRecord(rec)
	if err != nil {
		return fmt.Errorf("central directory record at offset %d: %s: %w", at, name, err)
	}
	found[e.Name] = e
	return nil
}

// recordLen is the length of the central directory record whose fixed
// part is h.
func recordLen(h []byte) int {
	return CentralLen + int(u16(h[28:])) + int(u16(h[30:])) + int(u16(h[32:]))
}

// parseRecord decodes the whole record rec.
func parseRecord(rec []byte) (Entry, error) {
	n, m := int(u16(rec[28:])), int(u16(rec[30:]))
	e := Entry{
		Name:             string(rec[CentralLen : CentralLen+n]),
		Flags:            u16(rec[8:]),
		Method:           u16(rec[10:]),
		CRC32:            u32(rec[16:]),
		CompressedSize:   uint64(u32(rec[20:])),
		UncompressedSize: uint64(u32(rec[24:])),
	}
	off := uint64(u32(rec[42:]))
	if err := zip64Fields(rec[CentralLen+n:CentralLen+n+m], &e.UncompressedSize, &e.CompressedSize, &off); err != nil {
		return Entry{}, err
	}
	if off > math.MaxInt64 {
		return Entry{}, fmt.Errorf("local header offset %d out of range", off)
	}
	e.HeaderOffset = int64(off)
	return e, nil
}

// zip64Fields replaces the saturated fields by those of the ZIP64 extra
// field in extra, if there is one: the saturated ones, in this order
// (APPNOTE 4.5.3).
func zip64Fields(extra []byte, fields ...*uint64) error {
	for len(extra) >= 4 {
		id, n := u16(extra), int(u16(extra[2:]))
		if n > len(extra)-4 {
			return fmt.Errorf("extra field of %d bytes runs past the record's", n)
		}
		if id == 0x0001 {
			z := extra[4 : 4+n]
			for _, f := range fields {
				if *f != 0xffffffff {
					continue
				}
				if len(z) < 8 {
					return errors.New("ZIP64 extra field shorter than the sizes and offset it must hold")
				}
				*f, z = u64(z), z[8:]
			}
			return nil
		}
		extra = extra[4+n:]
	}
	return nil
}
