package ziprange

import (
	"bytes"
	"fmt"
)

var sigCentralBytes = []byte("PK\x01\x02")

// search looks for names in windows of a directory too large to read
// whole, where an Order places them: an interpolation search, since the
// records of a directory in the hint's order lie at offsets roughly
// proportional to their positions.
type search struct {
	d     *Dir
	hint  Order
	want  map[string]bool
	found map[string]Entry
	buf   []byte // the window
}

// seen is what one window of the directory held.
type seen struct {
	at          int64 // where the window starts
	start, end  int64 // its whole records, walked from the first found
	records     int
	first, last known // the first and last of them the hint places
}

type known struct {
	pos        int
	start, end int64
	ok         bool
}

// find looks for name where the hint places it, in at most maxWindows
// windows. Not finding it is no error: the whole directory is read next.
func (s *search) find(name string) error {
	pos, total, ok := s.hint(name)
	if !ok || total <= 0 || pos < 0 || pos >= total {
		return nil
	}
	half := int64(len(s.buf)) / 2
	at := s.d.off + int64(float64(s.d.len)*float64(pos)/float64(total)) - half
	for range maxWindows {
		if _, done := s.found[name]; done {
			return nil
		}
		w, err := s.look(at)
		if err != nil {
			return err
		}
		if at, ok = s.next(w, pos); !ok {
			return nil
		}
	}
	return nil
}

// look reads the window at offset at, or the nearest one within the
// directory, finds where its records start and walks them, keeping the
// entries wanted.
func (s *search) look(at int64) (seen, error) {
	d, b := s.d, s.buf
	at = max(d.off, min(at, d.off+d.len-int64(len(b))))
	if err := readAt(d.ra, b, at); err != nil {
		return seen{}, fmt.Errorf("reading the central directory at offset %d: %w", at, err)
	}
	w := seen{at: at}
	p := syncRecords(b)
	if p < 0 {
		return w, nil
	}
	w.start = at + int64(p)
	for p+CentralLen <= len(b) && u32(b[p:]) == SigCentral {
		q := p + recordLen(b[p:])
		if q > len(b) {
			break
		}
		if err := d.keep(b[p:q], at+int64(p), s.want, s.found); err != nil {
			return w, err
		}
		if pos, _, ok := s.hint(string(b[p+CentralLen : p+CentralLen+int(u16(b[p+28:]))])); ok {
			k := known{pos: pos, start: at + int64(p), end: at + int64(q), ok: true}
			if !w.first.ok {
				w.first = k
			}
			w.last = k
		}
		w.records++
		p = q
	}
	w.end = at + int64(p)
	return w, nil
}

// next is where to look for the entry at pos after the window w: after
// it when every record w held that the hint places comes before pos,
// before it when every one comes after, as far as the records' average
// length says. ok is false when w tells nothing, or when pos should have
// been in it.
func (s *search) next(w seen, pos int) (at int64, ok bool) {
	f, l := w.first, w.last
	if !f.ok {
		return 0, false
	}
	n := int64(len(s.buf))
	avg := (w.end - w.start) / int64(w.records)
	switch {
	case l.pos < pos && w.at+n < s.d.off+s.d.len:
		return max(l.end, l.end+int64(pos-l.pos-1)*avg-n/2), true
	case f.pos > pos && w.at > s.d.off:
		return min(f.start, f.start-int64(f.pos-pos)*avg+n/2) - n, true
	}
	return 0, false
}

// syncRecords is the offset of the first record in b that lies whole in
// b and is followed by another record's signature or by b's end; -1 if
// there is none. A window starts anywhere in the directory, often inside
// a record, whose name may even hold a signature.
func syncRecords(b []byte) int {
	for p := 0; ; p++ {
		i := bytes.Index(b[p:], sigCentralBytes)
		if i < 0 {
			return -1
		}
		p += i
		if p+CentralLen > len(b) {
			return -1
		}
		q := p + recordLen(b[p:])
		if q <= len(b) && bytes.HasPrefix(sigCentralBytes, b[q:min(q+4, len(b))]) {
			return p
		}
	}
}
