package pkgread

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/iocount"
	"github.com/rsdump/rsdump/resourcesync"
)

const bufSize = 256 << 10

// Result is what reading one bitstream found.
type Result struct {
	Severity finding.Severity     // OK, Unverified or Error: the worst finding
	Length   int64                // bytes read, after inflating
	Sums     resourcesync.HashSet // the digests computed, in the manifest's order
	WriteErr error                // the destination writer failed; the bitstream was not judged
}

// Read reads b's entry once, from its compressed bytes to dst (which may
// be nil), computing CRC-32, length and the manifest's hashes on the way,
// and reports every mismatch. It stops at one byte past the manifest
// length or the expansion bound, so a zip bomb costs no more than an
// honest entry. The caller reports the OK verdict.
func (p *Package) Read(b *Bitstream, dst io.Writer) Result {
	if b.File == nil {
		return Result{Severity: finding.Error} // the reason was reported by OpenPackage
	}
	return p.read(b, dst, -1)
}

// reading is the state of one Read.
type reading struct {
	p     *Package
	b     *Bitstream
	f     *zip.File
	res   Result
	limit int64  // bytes to read at most, one past what is allowed
	capBy string // which bound set limit: CheckLength, CheckBomb or CheckSize
	start int64  // where the local header is (checkLocal)
	data  int64  // and the data
}

func (p *Package) read(b *Bitstream, dst io.Writer, max int64) Result {
	r := &reading{p: p, b: b, f: b.File}
	if !r.precheck(max) {
		return r.res
	}
	mh, err := p.hasher(b.Want)
	if err != nil { // cannot happen: Known filters
		r.fail(finding.CheckHash, "", "", err.Error())
		return r.res
	}
	crc := crc32.NewIEEE()
	n, ok := r.copy(dst, mh, crc)
	r.res.Length = n
	if !ok {
		return r.res
	}
	r.checkEnd(n, crc.Sum32())
	r.checkDigests(n, mh)
	return r.res
}

// hasher returns a Multi of the algorithms of want that rsdump knows,
// empty. Bitstreams are read one at a time, and nearly all of a package's
// list the same algorithms: one Multi, reset, serves them all, rather than
// new hashes for each of 50,000 small files.
func (p *Package) hasher(want digest.Set) (*digest.Multi, error) {
	if p.mh != nil && sameKnown(p.mh.Algs(), want) {
		p.mh.Reset()
		return p.mh, nil
	}
	mh, err := digest.NewMulti(want.Known()...)
	p.mh = mh
	return mh, err
}

// sameKnown says whether algs are the known algorithms of want, in order.
func sameKnown(algs []string, want digest.Set) bool {
	i := 0
	for _, s := range want {
		if !digest.Known(s.Alg) {
			continue
		}
		if i == len(algs) || algs[i] != s.Alg {
			return false
		}
		i++
	}
	return i == len(algs)
}

func (r *reading) fail(check, expected, actual, msg string) {
	r.note(finding.Error, check, expected, actual, msg)
}

func (r *reading) note(sev finding.Severity, check, expected, actual, msg string) {
	r.p.report(finding.Finding{Severity: sev, Code: check, URI: r.b.URL.Loc, Path: r.f.Name, Expected: expected, Actual: actual, Msg: msg})
	r.res.Severity = max(r.res.Severity, sev)
}

// precheck compares the sizes the central directory declares with the
// manifest and the expansion bound before reading anything, and sets the
// read limit. It returns false when the entry must not be read at all.
func (r *reading) precheck(maxLen int64) bool {
	f := r.f
	declared := clampInt64(f.UncompressedSize64)
	compressed := clampInt64(f.CompressedSize64)
	if r.b.Length >= 0 && declared != r.b.Length {
		r.fail(finding.CheckSize, itoa(r.b.Length), itoa(declared), "the central directory declares a size other than the manifest length")
	}
	ratioCap := int64(math.MaxInt64)
	switch f.Method {
	case zip.Store:
		if compressed != declared {
			r.fail(finding.CheckSize, itoa(declared), itoa(compressed), "stored entry whose compressed size differs from its size")
		}
	case zip.Deflate:
		ratioCap = ratioLimit(compressed, r.p.lim.ratio())
		if declared > ratioCap {
			r.fail(finding.CheckBomb, "at most "+itoa(ratioCap), itoa(declared), fmt.Sprintf("declared size is more than %g times the compressed size; not inflated", r.p.lim.ratio()))
			return false
		}
	default:
		r.fail(finding.CheckCompressed, "0 (store) or 8 (deflate)", strconv.Itoa(int(f.Method)), "unsupported compression method")
		return false
	}
	r.setLimit(declared, ratioCap, maxLen)
	return true
}

func (r *reading) setLimit(declared, ratioCap, maxLen int64) {
	r.limit, r.capBy = declared, finding.CheckSize
	if r.b.Length >= 0 {
		r.limit, r.capBy = r.b.Length, finding.CheckLength
	} else if maxLen >= 0 {
		r.limit, r.capBy = maxLen, finding.CheckLength
	}
	if ratioCap < r.limit {
		r.limit, r.capBy = ratioCap, finding.CheckBomb
	}
	if r.limit < math.MaxInt64 {
		r.limit++
	}
}

// ratioLimit is the most a deflated entry of the given compressed size may
// inflate to, with slack for tiny entries whose headers dominate.
func ratioLimit(compressed int64, ratio float64) int64 {
	lim := float64(compressed)*ratio + 4096
	if lim >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lim)
}

// copy streams the entry through the hashes into dst. It returns false
// when the entry could not be read to its end, after reporting why.
func (r *reading) copy(dst io.Writer, mh *digest.Multi, crc io.Writer) (int64, bool) {
	if !r.checkLocal() {
		return 0, false
	}
	raw, err := r.f.OpenRaw()
	if err != nil {
		r.fail(finding.CheckZip, "", "", "local header: "+err.Error())
		return 0, false
	}
	src := raw
	var cr *iocount.Reader
	var br *bufio.Reader
	if r.f.Method == zip.Deflate {
		// flate reads a ByteReader byte by byte, never past the end of
		// the stream: what cr counted less what is buffered is what the
		// stream used.
		cr = &iocount.Reader{R: raw}
		br = bufio.NewReaderSize(cr, 64<<10)
		fr := flate.NewReader(br)
		defer fr.Close()
		src = fr
	}
	ws := []io.Writer{mh}
	var scan *sigScan
	if r.f.Method == zip.Store && r.f.Flags&flagDataDesc != 0 {
		scan = &sigScan{at: -1}
		ws = append(ws, scan)
	}
	var w io.Writer
	var dw *iocount.Writer
	if dst != nil {
		// The CRC-32, a tenth of the hashes' time, goes with the write:
		// the hashes take longer than it.
		dw = &iocount.Writer{W: dst}
		w = &besideWriter{checks: io.MultiWriter(ws...), dst: io.MultiWriter(crc, dw)}
	} else {
		w = io.MultiWriter(append(ws, crc)...)
	}
	if r.p.buf == nil {
		r.p.buf = make([]byte, bufSize)
	}
	lr := io.LimitReader(src, r.limit)
	n, err := io.CopyBuffer(w, lr, r.p.buf)
	r.p.addSpan(r.f, r.start, r.data)
	if dw != nil && dw.Err != nil {
		r.res.WriteErr, r.res.Severity = dw.Err, finding.Error
		return n, false
	}
	if !r.readOK(n, err) {
		return n, false
	}
	if scan != nil && scan.at >= 0 {
		r.fail(finding.CheckZip, "", "", fmt.Sprintf("stored entry with a data descriptor holds a descriptor signature at data offset %d: a streaming reader (bsdtar from a pipe) would end the entry there and read what follows as other entries", scan.at))
		return n, false
	}
	if cr != nil {
		if used := cr.N - int64(br.Buffered()); used < clampInt64(r.f.CompressedSize64) {
			r.fail(finding.CheckZip, "", "", fmt.Sprintf("%d bytes after the end of the deflate stream, inside the entry's compressed size, belong to nothing: a streaming reader reads them as what follows the entry", clampInt64(r.f.CompressedSize64)-used))
			return n, false
		}
	}
	return n, true
}

// readOK reports a read error, or bytes beyond the limit.
func (r *reading) readOK(n int64, err error) bool {
	var ce flate.CorruptInputError
	switch {
	case errors.As(err, &ce):
		r.fail(finding.CheckInflate, "", "", "deflate stream is corrupt: "+err.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		r.fail(finding.CheckSize, "", "", "compressed data ends early (truncated entry)")
	case err != nil:
		r.fail(finding.CheckRead, "", "", err.Error())
	case n == r.limit && r.limit > 0:
		r.overflow(n - 1)
	default:
		return true
	}
	return false
}

func (r *reading) overflow(allowed int64) {
	switch {
	case r.b.N == 0: // manifest.xml, bounded by the sitemap limit
		r.fail(finding.CheckManifest, "at most "+itoa(allowed), "more", "manifest.xml is larger than the sitemap limit; reading stopped")
	case r.capBy == finding.CheckLength:
		r.fail(finding.CheckLength, itoa(allowed), "more than "+itoa(allowed), "entry holds more bytes than the manifest length; reading stopped")
	case r.capBy == finding.CheckBomb:
		r.fail(finding.CheckBomb, "at most "+itoa(allowed), "more", fmt.Sprintf("entry inflates to more than %g times its compressed size; reading stopped", r.p.lim.ratio()))
	default:
		r.fail(finding.CheckSize, itoa(allowed), "more than "+itoa(allowed), "entry inflates past its declared size; reading stopped")
	}
}

// checkEnd compares what was read with the sizes and CRC-32 the archive
// declares, including a data descriptor's CRC when there is one.
func (r *reading) checkEnd(n int64, crc uint32) {
	if declared := clampInt64(r.f.UncompressedSize64); n != declared {
		r.fail(finding.CheckSize, itoa(declared), itoa(n), "entry size differs from the size the central directory declares")
	}
	if crc != r.f.CRC32 {
		r.fail(finding.CheckCRC, hex32(r.f.CRC32), hex32(crc), "CRC-32 mismatch")
	}
	if r.f.Flags&0x8 == 0 {
		return
	}
	d, err := r.p.descriptorCRC(r.f)
	switch {
	case err != nil:
		r.fail(finding.CheckZip, "", "", "data descriptor: "+err.Error())
	case d != crc && d != r.f.CRC32: // one record agreeing with the data, or both agreeing, is one error at most
		r.fail(finding.CheckCRC, hex32(crc), hex32(d), "data descriptor CRC-32 differs from the data and the central directory")
	}
}

// checkDigests compares length and hashes with the manifest. Algorithms
// rsdump cannot compute make the bitstream unverified unless another one
// verified it; a bitstream without hashes is length-only, never OK.
func (r *reading) checkDigests(n int64, mh *digest.Multi) {
	if r.b.N == 0 {
		return // manifest.xml itself
	}
	if r.b.Length >= 0 && n != r.b.Length {
		r.fail(finding.CheckLength, itoa(r.b.Length), itoa(n), "length differs from the manifest")
	}
	r.res.Sums = mh.Sums()
	ok, bad, unchecked := digest.Check(r.b.Want, r.res.Sums)
	for _, m := range bad {
		r.fail(finding.CheckHash, m.Alg+":"+m.Want, m.Alg+":"+m.Got, m.Alg+" mismatch")
	}
	if len(bad) == 0 {
		r.checkCoverage(len(ok), unchecked)
	}
}

func (r *reading) checkCoverage(verified int, unchecked []string) {
	if sev, check, msg := Coverage(len(r.b.Want), r.b.Length, verified, unchecked); sev != finding.OK {
		r.note(sev, check, "", "", msg)
	}
}

// Coverage says how far a bitstream of the right length and with no hash
// mismatch was verified, given how many hashes were listed and verified
// and which could not be computed.
func Coverage(listed int, length int64, verified int, unchecked []string) (finding.Severity, string, string) {
	switch {
	case listed == 0 && length < 0:
		return finding.Unverified, finding.CheckHash, "manifest gives neither length nor hash: unverified"
	case listed == 0:
		return finding.Unverified, finding.CheckHash, "manifest gives no hash: length-only"
	case verified == 0:
		return finding.Unverified, finding.CheckHashAlg, fmt.Sprintf("rsdump cannot compute %v: unverifiable", unchecked)
	case len(unchecked) > 0:
		return finding.Warning, finding.CheckHashAlg, fmt.Sprintf("rsdump cannot compute %v: unverifiable (other hashes verified)", unchecked)
	}
	return finding.OK, "", ""
}

// descriptorCRC reads the CRC-32 of the data descriptor that follows an
// entry's data; its signature is optional (APPNOTE 4.3.9.3).
func (p *Package) descriptorCRC(f *zip.File) (uint32, error) {
	off, err := f.DataOffset()
	if err != nil {
		return 0, err
	}
	var b [8]byte
	if _, err := p.ra.ReadAt(b[:], off+int64(f.CompressedSize64)); err != nil {
		return 0, err
	}
	if binary.LittleEndian.Uint32(b[:4]) == 0x08074b50 {
		return binary.LittleEndian.Uint32(b[4:]), nil
	}
	return binary.LittleEndian.Uint32(b[:4]), nil
}

// besideWriter writes each buffer to the checks (the hashes, the
// signature scan) on a goroutine of its own while dst (a staging file)
// takes it on this one, and returns once both have: hashing a bitstream
// and writing it are each about half of unpacking it, and neither waits
// for the other. A small buffer is not worth the goroutine.
type besideWriter struct {
	checks io.Writer // never fails
	dst    io.Writer
}

// besideMin is the smallest buffer hashed beside its write.
const besideMin = 16 << 10

func (b *besideWriter) Write(p []byte) (int, error) {
	if len(p) < besideMin {
		b.checks.Write(p)
		return b.dst.Write(p)
	}
	done := make(chan struct{})
	go func() {
		b.checks.Write(p)
		close(done)
	}()
	n, err := b.dst.Write(p)
	<-done
	return n, err
}

func clampInt64(u uint64) int64 {
	if u > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(u)
}

func itoa(n int64) string   { return strconv.FormatInt(n, 10) }
func hex32(v uint32) string { return fmt.Sprintf("%08x", v) }

// sigScan finds the first data descriptor signature in the data written
// to it, also across writes; at is its offset, -1 when there is none.
type sigScan struct {
	n     int64
	carry []byte // the last bytes of the previous write, at most 3
	at    int64
}

var descriptorSig = []byte{'P', 'K', 7, 8}

func (s *sigScan) Write(p []byte) (int, error) {
	if s.at < 0 {
		if i := bytes.Index(append(s.carry, p[:min(len(p), 3)]...), descriptorSig); i >= 0 {
			s.at = s.n - int64(len(s.carry)) + int64(i)
		} else if i := bytes.Index(p, descriptorSig); i >= 0 {
			s.at = s.n + int64(i)
		}
		if len(p) >= 3 {
			s.carry = append(s.carry[:0], p[len(p)-3:]...)
		} else {
			c := append(s.carry, p...)
			s.carry = append(s.carry[:0], c[max(0, len(c)-3):]...)
		}
	}
	s.n += int64(len(p))
	return len(p), nil
}

// Describe writes a length and digests as one report field.
func Describe(length int64, sums resourcesync.HashSet) string {
	// One allocation: unpack describes every bitstream it writes.
	n := len("length=") + 20
	for _, s := range sums {
		n += 2 + len(s.Alg) + len(s.Hex)
	}
	var b strings.Builder
	b.Grow(n)
	if length >= 0 {
		var num [20]byte
		b.WriteString("length=")
		b.Write(strconv.AppendInt(num[:0], length, 10))
	}
	for _, s := range sums {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.Alg)
		b.WriteByte(':')
		b.WriteString(s.Hex)
	}
	return b.String()
}
