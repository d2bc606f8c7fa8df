// Package entryspool keeps a document's decoded entries in a file, to be
// read back in order without decoding the XML again. unpack's survey of a
// Resource Dump decodes every manifest before any package is staged; it
// spools the entries, and staging reads them from the spool instead of
// decoding the same manifest a second time (encoding/xml is the largest
// share of unpack's CPU for small files).
//
// A spool is a sequence of records, each a uvarint length and that many
// bytes, and a trailer: an empty record, the number of entries, the CRC-32
// of every record before it (lengths and bytes) and the source, a hash of
// what the entries were decoded from. Open checks the source and the CRC,
// so that a spool of other bytes or a damaged one is told before any
// entry is read; Next returns io.EOF only once the count checked out, so
// a spool cut short under it is an error, never a shorter list of
// entries.
package entryspool

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"time"

	"github.com/rsdump/rsdump/internal/extsort"
	"github.com/rsdump/rsdump/resourcesync"
)

// maxRecord bounds one entry's record, as the decoder bounds the input
// read for one entry, so that a damaged length cannot ask for gigabytes.
const maxRecord = 16 << 20

// Writer spools entries to a new file.
type Writer struct {
	f    *os.File
	w    *bufio.Writer
	crc  hash.Hash32
	n    int64
	size int64 // bytes written
	buf  []byte
	err  error
}

// Create starts a spool in dir, named by pattern as os.CreateTemp takes
// it, so that whoever clears dir can find what a killed process left.
func Create(dir, pattern string) (*Writer, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f, w: bufio.NewWriterSize(f, 64<<10), crc: crc32.NewIEEE()}, nil
}

// Name is the spool's file name.
func (w *Writer) Name() string { return w.f.Name() }

// Add appends an entry. An error sticks and is returned by Close.
func (w *Writer) Add(u resourcesync.URL) {
	if w.err != nil {
		return
	}
	e := encoder{b: w.buf[:0]}
	e.url(&u)
	w.buf = e.b
	switch {
	case e.err != nil:
		w.err = fmt.Errorf("entry %d: %w", w.n+1, e.err)
		return
	case len(w.buf) > maxRecord:
		w.err = fmt.Errorf("entry %d: %d bytes, more than a spool record holds", w.n+1, len(w.buf))
		return
	}
	w.n++
	var l [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(l[:], uint64(len(w.buf)))
	w.crc.Write(l[:k])
	w.crc.Write(w.buf)
	w.w.Write(l[:k])
	_, w.err = w.w.Write(w.buf)
	w.size += int64(k + len(w.buf))
}

// Size is the number of bytes of entries written so far.
func (w *Writer) Size() int64 { return w.size }

// Source identifies what a spool's entries were decoded from: unpack
// gives the SHA-256 of the manifest's bytes.
type Source [32]byte

// trailerSize is the size of the trailer: the empty record, the count,
// the CRC-32 and the source.
const trailerSize = 1 + 8 + 4 + 32

// Close writes the trailer, naming src as what the entries were decoded
// from, and closes the file. On an error the file is removed.
func (w *Writer) Close(src Source) error {
	if w.err == nil {
		t := binary.LittleEndian.AppendUint64([]byte{0}, uint64(w.n))
		t = binary.LittleEndian.AppendUint32(t, w.crc.Sum32())
		w.w.Write(append(t, src[:]...))
		w.err = w.w.Flush()
	}
	if err := w.f.Close(); w.err == nil {
		w.err = err
	}
	if w.err != nil {
		os.Remove(w.f.Name())
	}
	return w.err
}

// Abort closes and removes the spool.
func (w *Writer) Abort() {
	w.f.Close()
	os.Remove(w.f.Name())
}

// Reader reads a spool's entries back in order.
type Reader struct {
	f       *os.File
	r       *bufio.Reader
	n       int64
	buf     []byte
	eof     bool
	trailer [trailerSize]byte
	left    int64 // bytes before the trailer not yet read
}

// ErrDamaged is wrapped by every error about a spool's content.
var ErrDamaged = errors.New("spool damaged")

// ErrOtherSource is Open's error for a spool whose entries were decoded
// from something other than the source asked for.
var ErrOtherSource = errors.New("spool of another source")

// Open opens the spool at name, if its entries were decoded from src.
func Open(name string, src Source) (*Reader, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	r := &Reader{f: f, r: bufio.NewReaderSize(f, 64<<10)}
	fi, err := f.Stat()
	if err == nil {
		r.left = fi.Size() - trailerSize
		_, err = f.ReadAt(r.trailer[:], max(r.left, 0))
	}
	switch {
	case err == nil && r.left >= 0 && Source(r.trailer[13:]) != src:
		err = fmt.Errorf("%s: %w", name, ErrOtherSource)
	case err == io.EOF || err == nil && r.left < 0:
		err = r.damaged("shorter than its trailer")
	case err == nil:
		err = r.checkCRC()
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// checkCRC reads the records once before any is handed out, so that a
// damaged spool is told at Open, when its reader can still decode the
// document instead: a few milliseconds for a package's spool, against
// the seconds of decoding its XML.
func (r *Reader) checkCRC() error {
	c := crc32.NewIEEE()
	if _, err := io.Copy(c, io.NewSectionReader(r.f, 0, r.left)); err != nil {
		return err
	}
	if c.Sum32() != binary.LittleEndian.Uint32(r.trailer[9:]) {
		return r.damaged("CRC-32 differs from the trailer's")
	}
	return nil
}

// Next returns the next entry, or io.EOF after the last one once the
// trailer has been checked.
func (r *Reader) Next() (resourcesync.URL, error) {
	if r.eof {
		return resourcesync.URL{}, io.EOF
	}
	if r.left == 0 {
		return resourcesync.URL{}, r.end()
	}
	l, k, err := r.length()
	switch {
	case err != nil:
		return resourcesync.URL{}, r.damaged("entry %d: %v", r.n+1, noEOF(err))
	case l == 0 || l > maxRecord || int64(l)+int64(k) > r.left:
		return resourcesync.URL{}, r.damaged("entry %d: a record of %d bytes, %d left before the trailer", r.n+1, l, r.left)
	}
	r.left -= int64(l) + int64(k)
	if cap(r.buf) < int(l) {
		r.buf = make([]byte, l)
	}
	r.buf = r.buf[:l]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		return resourcesync.URL{}, r.damaged("entry %d: %v", r.n+1, noEOF(err))
	}
	r.n++
	d := decoder{b: r.buf}
	u := d.url()
	if d.err != nil || len(d.b) != 0 {
		return resourcesync.URL{}, r.damaged("entry %d: %v", r.n, orErr(d.err, "bytes left over"))
	}
	return u, nil
}

// end checks the trailer's count against the entries read (Open checked
// its CRC).
func (r *Reader) end() error {
	t := r.trailer[:]
	switch {
	case t[0] != 0:
		return r.damaged("no trailer")
	case binary.LittleEndian.Uint64(t[1:]) != uint64(r.n):
		return r.damaged("%d entries, the trailer says %d", r.n, binary.LittleEndian.Uint64(t[1:]))
	}
	r.eof = true
	return io.EOF
}

// length reads a record's length, a uvarint, and says how many bytes it
// took.
func (r *Reader) length() (l uint64, k int, err error) {
	for shift := 0; k < binary.MaxVarintLen64; shift += 7 {
		c, err := r.r.ReadByte()
		if err != nil {
			return 0, k, err
		}
		k++
		l |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return l, k, nil
		}
	}
	return 0, k, errors.New("record length overflows")
}

func (r *Reader) damaged(format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", r.f.Name(), ErrDamaged, fmt.Sprintf(format, args...))
}

// Close closes the spool's file.
func (r *Reader) Close() error { return r.f.Close() }

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func orErr(err error, msg string) error {
	if err != nil {
		return err
	}
	return errors.New(msg)
}

// encoder writes one record; the first error sticks.
type encoder struct {
	b   []byte
	err error
}

// url encodes every field of u, in the order decoder.url reads them.
func (e *encoder) url(u *resourcesync.URL) {
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

func (e *encoder) md(m *resourcesync.MD) {
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

func (e *encoder) link(l *resourcesync.Link) {
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

func (d *decoder) url() resourcesync.URL {
	var u resourcesync.URL
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
		u.Links = make([]resourcesync.Link, n)
		for i := range u.Links {
			d.link(&u.Links[i])
		}
	}
	return u
}

func (d *decoder) md() *resourcesync.MD {
	m := &resourcesync.MD{Capability: d.string()}
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
		m.Pieces = &resourcesync.Pieces{}
		if n := d.length(); n != nil {
			m.Pieces.Length = *n
		}
		m.Pieces.Hash = d.string()
	}
	return m
}

func (d *decoder) link(l *resourcesync.Link) {
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
	if len(d.b) == 0 {
		d.fail("cut short")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
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

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
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

// Codec stores entries in the run files of an external sort
// (internal/extsort) as a spool's records: a uvarint length and that many
// bytes, every field of the entry kept. An entry the encoding refuses (a
// time whose zone offset has no binary form, which no parsed document
// gives) is stored as an empty record, which Read refuses: it is never
// read back as another entry.
var Codec = extsort.Codec[resourcesync.URL]{Append: appendRecord, Read: readRecord}

func appendRecord(b []byte, u *resourcesync.URL) []byte {
	e := encoder{}
	e.url(u)
	if e.err != nil || len(e.b) > maxRecord {
		return append(b, 0)
	}
	return append(binary.AppendUvarint(b, uint64(len(e.b))), e.b...)
}

func readRecord(r *bufio.Reader) (resourcesync.URL, error) {
	l, err := binary.ReadUvarint(r)
	switch {
	case err == io.EOF:
		return resourcesync.URL{}, io.EOF
	case err != nil:
		return resourcesync.URL{}, err
	case l == 0:
		return resourcesync.URL{}, fmt.Errorf("%w: an entry that could not be encoded", ErrDamaged)
	case l > maxRecord:
		return resourcesync.URL{}, fmt.Errorf("%w: a record of %d bytes", ErrDamaged, l)
	}
	b := make([]byte, l)
	if _, err := io.ReadFull(r, b); err != nil {
		return resourcesync.URL{}, noEOF(err)
	}
	d := decoder{b: b}
	u := d.url()
	if d.err != nil || len(d.b) != 0 {
		return resourcesync.URL{}, fmt.Errorf("%w: %v", ErrDamaged, orErr(d.err, "bytes left over"))
	}
	return u, nil
}
