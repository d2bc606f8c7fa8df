package resourcesync

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// AppendBinary appends the entry's binary form, every field kept, to b
// (encoding.BinaryAppender): the records of rsdump's spools and external
// sorts of entries, read back by UnmarshalBinary. A time whose zone offset
// has no binary form (which no parsed document gives) is an error.
func (u *URL) AppendBinary(b []byte) ([]byte, error) {
	e := encoder{b: b}
	e.url(u)
	return e.b, e.err
}

// UnmarshalBinary sets u to the entry whose binary form (AppendBinary) is
// all of data.
func (u *URL) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	*u = d.url()
	switch {
	case d.err != nil:
		return d.err
	case len(d.b) != 0:
		return errors.New("bytes left over")
	}
	return nil
}

// encoder writes one record; the first error sticks.
type encoder struct {
	b   []byte
	err error
}

// url encodes every field of u, in the order decoder.url reads them.
func (e *encoder) url(u *URL) {
	e.string(u.Loc)
	e.time(u.Lastmod)
	e.string(u.ChangeFreq)
	if e.flag(u.MD != nil) {
		e.md(u.MD)
	}
	e.b = binary.AppendUvarint(e.b, uint64(len(u.Links)))
	for i := range u.Links {
		e.link(&u.Links[i])
	}
}

func (e *encoder) md(m *MD) {
	e.string(m.Capability)
	for _, t := range []time.Time{m.At, m.Completed, m.From, m.Until, m.Datetime} {
		e.time(t)
	}
	e.string(m.Change)
	e.string(m.Hash)
	e.length(m.Length)
	e.string(m.Path)
	e.string(m.Type)
	e.string(m.Encoding)
	if e.flag(m.Pieces != nil) {
		e.length(&m.Pieces.Length)
		e.string(m.Pieces.Hash)
	}
}

func (e *encoder) link(l *Link) {
	e.string(l.Rel)
	e.string(l.Href)
	e.b = binary.AppendVarint(e.b, int64(l.Pri))
	e.string(l.Hash)
	e.length(l.Length)
	e.time(l.Modified)
	e.string(l.Path)
	e.string(l.Type)
	e.string(l.Encoding)
}

func (e *encoder) flag(set bool) bool {
	if set {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
	return set
}

func (e *encoder) string(s string) {
	e.b = append(binary.AppendUvarint(e.b, uint64(len(s))), s...)
}

// time writes 0 for the zero time, else the length of its binary form
// (which keeps the zone offset) and the form.
func (e *encoder) time(t time.Time) {
	if !e.flag(!t.IsZero()) {
		return
	}
	at := len(e.b) - 1
	b, err := t.AppendBinary(e.b)
	if err != nil && e.err == nil {
		e.err = err
	}
	e.b = b
	e.b[at] = byte(len(e.b) - at - 1)
}

func (e *encoder) length(n *int64) {
	if e.flag(n != nil) {
		e.b = binary.AppendVarint(e.b, *n)
	}
}

// minLink is the fewest bytes a link's record takes: eight empty
// strings and flags, and a one-byte priority.
const minLink = 9

// decoder reads one record; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) url() URL {
	var u URL
	u.Loc = d.string()
	u.Lastmod = d.time()
	u.ChangeFreq = d.string()
	if d.flag() {
		u.MD = d.md()
	}
	if n := d.uvarint(); n > 0 && d.err == nil {
		if n > uint64(len(d.b))/minLink { // before allocating them
			d.fail("%d links", n)
			return u
		}
		u.Links = make([]Link, n)
		for i := range u.Links {
			d.link(&u.Links[i])
		}
	}
	return u
}

func (d *decoder) md() *MD {
	m := &MD{Capability: d.string()}
	for _, t := range []*time.Time{&m.At, &m.Completed, &m.From, &m.Until, &m.Datetime} {
		*t = d.time()
	}
	m.Change = d.string()
	m.Hash = d.string()
	m.Length = d.length()
	m.Path = d.string()
	m.Type = d.string()
	m.Encoding = d.string()
	if d.flag() {
		m.Pieces = &Pieces{}
		if n := d.length(); n != nil {
			m.Pieces.Length = *n
		}
		m.Pieces.Hash = d.string()
	}
	return m
}

func (d *decoder) link(l *Link) {
	l.Rel = d.string()
	l.Href = d.string()
	l.Pri = int(d.varint())
	l.Hash = d.string()
	l.Length = d.length()
	l.Modified = d.time()
	l.Path = d.string()
	l.Type = d.string()
	l.Encoding = d.string()
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	p := d.take(1)
	if p == nil {
		return 0
	}
	return p[0]
}

func (d *decoder) flag() bool {
	switch c := d.byte(); c {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail("flag %d", c)
		return false
	}
}

func (d *decoder) uvarint() uint64 { return readVarint(d, binary.Uvarint, "uvarint") }

func (d *decoder) varint() int64 { return readVarint(d, binary.Varint, "varint") }

// readVarint reads one varint with read, binary.Uvarint or binary.Varint.
func readVarint[T uint64 | int64](d *decoder, read func([]byte) (T, int), what string) T {
	v, n := read(d.b)
	if n <= 0 {
		d.fail("bad %s", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) take(n uint64) []byte {
	if n > uint64(len(d.b)) {
		d.fail("cut short")
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) string() string {
	n := d.uvarint()
	if n == 0 {
		return ""
	}
	return string(d.take(n))
}

func (d *decoder) time() time.Time {
	n := d.byte()
	if n == 0 {
		return time.Time{}
	}
	var t time.Time
	if p := d.take(uint64(n)); d.err == nil {
		if err := t.UnmarshalBinary(p); err != nil {
			d.fail("time: %v", err)
		}
	}
	return t
}

func (d *decoder) length() *int64 {
	if !d.flag() {
		return nil
	}
	n := d.varint()
	return &n
}
