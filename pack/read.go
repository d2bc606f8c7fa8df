package pack

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	kflate "github.com/klauspost/compress/flate"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/zipw"
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
	data   *bytes.Buffer // bytes to write: compressed or raw
	sums   digest.Set
	typ    string
	err    error
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuf(n int64) *bytes.Buffer {
	b := bufPool.Get().(*bytes.Buffer)
	b.Reset()
	b.Grow(int(n))
	return b
}

func putBuf(b *bytes.Buffer) {
	if b != nil && b.Cap() <= 2*smallMax {
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
	p.crc = crc32.ChecksumIEEE(raw.Bytes())
	p.sums = e.mh.Sums()
	p.typ = mediaType(it.rel, head(raw.Bytes()))
	p.method, p.data = zipw.Store, raw
	if e.wantDeflate(it.rel, p.typ) {
		e.deflate(p, raw)
	}
	return p
}

// beforeRead is a test hook: tests change or remove a file between the
// walk and the read.
var beforeRead = func(rel string) {}

func (e *encoder) read(it item) (*bytes.Buffer, error) {
	beforeRead(it.rel)
	f, err := os.Open(it.abs)
	if err != nil {
		return nil, &FileError{Path: it.rel, Err: err}
	}
	defer f.Close()
	e.mh.Reset()
	raw := getBuf(it.size + 1)
	// Read one byte past the walked size so growth is noticed.
	n, err := io.Copy(io.MultiWriter(raw, e.mh), io.LimitReader(f, it.size+1))
	if err != nil {
		putBuf(raw)
		return nil, &FileError{Path: it.rel, Err: err}
	}
	if err := unchanged(f, it, n); err != nil {
		putBuf(raw)
		return nil, err
	}
	return raw, nil
}

// unchanged checks that the file read is the file walked: same length,
// size and modification time after reading.
func unchanged(f *os.File, it item, n int64) error {
	fi, err := f.Stat()
	if err != nil {
		return &FileError{Path: it.rel, Err: err}
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
func (e *encoder) deflate(p *prepared, raw *bytes.Buffer) {
	out := getBuf(int64(raw.Len()/2 + 64))
	e.fw.Reset(out)
	e.fw.Write(raw.Bytes()) // writes to a bytes.Buffer cannot fail
	e.fw.Close()
	if e.opts.Compress == Auto && float64(out.Len()) > shrinkRatio*float64(raw.Len()) {
		putBuf(out)
		return
	}
	putBuf(raw)
	p.method, p.data = zipw.Deflate, out
}
