package pack

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	kflate "github.com/klauspost/compress/flate"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/zipw"
	"github.com/rsdump/rsdump/resourcesync"
)

// smallMax is the size up to which a file is read, hashed and compressed
// by a worker in memory, in parallel with others; larger files are
// streamed straight into the package by the writer.
const smallMax = 8 << 20

// shrinkRatio: data that deflates to more than this fraction of its size is
// stored instead.
const shrinkRatio = 0.97

// prepared is a file read and encoded by a worker, ready to be appended.
type prepared struct {
	it     item
	method uint16
	crc    uint32
	data   *buffer // bytes to write: compressed or raw
	sums   digest.Set
	pieces string // the hex digests of its pieces, when it has them (bitstreamPieceMin)
	typ    string
	err    error
}

// A bitstream of more than bitstreamPieceMin bytes gets, in its manifest
// entry, the hashes of its pieces of bitstreamPiece bytes
// (resourcesync.Pieces), computed in the same read as its other hashes:
// a repair of a few damaged bytes then fetches the pieces they are in,
// not the whole bitstream. Below it, a bitstream is a few pieces at most,
// and its entry is kept short.
const (
	bitstreamPieceMin = 4 << 20
	bitstreamPiece    = 1 << 20
)

// setPieces makes mh hash the pieces of a file of size bytes, when it is
// to have them.
func setPieces(mh *digest.Multi, size int64) {
	if size > bitstreamPieceMin {
		mh.SetPieces(bitstreamPiece)
	} else {
		mh.SetPieces(0)
	}
}

// piecesOf is the Pieces attribute of a file whose piece digests (hex,
// one after another) are sums; nil for none.
func piecesOf(sums string) *resourcesync.Pieces {
	if sums == "" {
		return nil
	}
	return &resourcesync.Pieces{Length: bitstreamPiece, Hash: digest.PieceAlg + ":" + sums}
}

// buffer is a pooled byte slice: workers read whole files into them.
type buffer struct{ b []byte }

var bufPool = sync.Pool{New: func() any { return new(buffer) }}

// getBuf returns an empty buffer with room for n bytes.
func getBuf(n int64) *buffer {
	b := bufPool.Get().(*buffer)
	if int64(cap(b.b)) < n {
		b.b = make([]byte, 0, n)
	}
	b.b = b.b[:0]
	return b
}

func putBuf(b *buffer) {
	if b != nil && cap(b.b) <= 2*smallMax {
		bufPool.Put(b)
	}
}

// encoder reads small files. One per worker: it reuses its hashes and
// its deflate state.
type encoder struct {
	opts *Options
	mh   *digest.Multi
	fw   *kflate.Writer
}

func newEncoder(o *Options) (*encoder, error) {
	mh, err := digest.NewMulti(o.Hashes...)
	if err != nil {
		return nil, err
	}
	fw, err := kflate.NewWriter(io.Discard, o.Level)
	if err != nil {
		return nil, err
	}
	return &encoder{opts: o, mh: mh, fw: fw}, nil
}

// prepare reads it once, feeding the manifest hashes and CRC-32 from the
// same buffer that is then compressed.
func (e *encoder) prepare(it item) *prepared {
	p := &prepared{it: it}
	raw, err := e.read(it)
	if err != nil {
		p.err = err
		return p
	}
	p.crc = crc32.ChecksumIEEE(raw.b)
	p.sums, p.pieces = e.mh.Sums(), e.mh.PieceSums()
	p.typ = mediaType(it.rel, head(raw.b))
	p.method, p.data = zipw.Store, raw
	if e.wantDeflate(it.rel, p.typ) {
		e.deflate(p, raw)
	}
	return p
}

// beforeRead is a test hook: tests change or remove a file between the
// walk and the read.
var beforeRead = func(rel string) {}

func (e *encoder) read(it item) (*buffer, error) {
	beforeRead(it.rel)
	f, err := os.Open(it.abs)
	if err != nil {
		return nil, &FileError{Path: it.rel, Err: err}
	}
	defer f.Close()
	e.mh.Reset()
	setPieces(e.mh, it.size)
	raw := getBuf(it.size + 1)
	n, err := readInto(raw, f, it.size+1) // one byte more notices growth
	if err == nil {
		e.mh.Write(raw.b)
		err = unchanged(f, it, n)
	}
	if err != nil {
		putBuf(raw)
		var fe *FileError
		if !errors.As(err, &fe) {
			err = &FileError{Path: it.rel, Err: err}
		}
		return nil, err
	}
	return raw, nil
}

// readInto reads up to limit bytes of r straight into buf, without an
// intermediate copy.
func readInto(buf *buffer, r io.Reader, limit int64) (int64, error) {
	n, err := io.ReadFull(r, buf.b[:limit])
	buf.b = buf.b[:n]
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = nil
	}
	return int64(n), err
}

// unchanged checks that the file read is the file walked: the same file
// (device and inode: not another one renamed over its name, before or
// while it was read), of the same length, size and modification time
// after reading.
func unchanged(f *os.File, it item, n int64) error {
	fi, err := f.Stat()
	if err != nil {
		return &FileError{Path: it.rel, Err: err}
	}
	if !sameFile(it.id, fi) {
		return &FileError{Path: it.rel, Err: fmt.Errorf("%w (another file was renamed over it after the walk)", ErrChanged)}
	}
	if now, err := os.Stat(it.abs); err != nil || !os.SameFile(now, fi) {
		return &FileError{Path: it.rel, Err: fmt.Errorf("%w (it was replaced or removed while read)", ErrChanged)}
	}
	if n != it.size || fi.Size() != it.size || !fi.ModTime().Equal(it.mtime) {
		return &FileError{Path: it.rel, Err: fmt.Errorf("%w (size %d, read %d, now %d bytes)", ErrChanged, it.size, n, fi.Size())}
	}
	return nil
}

func head(b []byte) []byte { return b[:min(len(b), 512)] }

func (e *encoder) wantDeflate(name, typ string) bool {
	switch e.opts.Compress {
	case Store:
		return false
	case Deflate:
		return true
	}
	return !isCompressed(name, typ)
}

// deflate compresses raw; in auto mode it keeps the raw bytes when
// deflate does not pay.
func (e *encoder) deflate(p *prepared, raw *buffer) {
	out := getBuf(int64(len(raw.b)/2 + 64))
	bb := bytes.NewBuffer(out.b)
	e.fw.Reset(bb)
	e.fw.Write(raw.b) // writes to a bytes.Buffer cannot fail
	e.fw.Close()
	out.b = bb.Bytes()
	if e.opts.Compress == Auto && float64(len(out.b)) > shrinkRatio*float64(len(raw.b)) {
		putBuf(out)
		return
	}
	putBuf(raw)
	p.method, p.data = zipw.Deflate, out
}
