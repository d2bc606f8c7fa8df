package unpack

import (
	"encoding/hex"
	"hash"
	"io"
	"os"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/ziprange"
)

// byPieces returns a reader of a's bitstream made of the file already at
// its target and the package, piece by piece (resourcesync.Pieces): a
// piece of the file whose hash is the manifest's is read from the file,
// any other from the package, by a range of its stored entry. A few
// damaged bytes in a large file so fetch the pieces they are in, not the
// whole bitstream. ok is false, and the bitstream is read whole, when its
// entry gives no piece hashes rsdump can use, the entry is not stored
// (a deflated entry's bytes cannot be read from the middle), or there is
// no file at the target. What the reader gives is checked against the
// bitstream's length and hashes as any staged bitstream is.
func (u *unpacker) byPieces(a *action, zd *ziprange.Dir, e ziprange.Entry) (io.ReadCloser, bool) {
	md := a.b.URL.MD
	if md == nil || md.Pieces == nil || a.b.Length < 0 || e.UncompressedSize != uint64(a.b.Length) || u.dest.root == nil {
		return nil, false
	}
	alg, sums, err := md.Pieces.Sums(a.b.Length)
	if err != nil {
		return nil, false
	}
	h, err := digest.New(alg)
	if err != nil {
		return nil, false
	}
	fi, err := u.dest.root.Lstat(a.target)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	st, err := zd.OpenStored(e)
	if err != nil {
		return nil, false
	}
	f, err := u.dest.root.Open(a.target)
	if err != nil {
		return nil, false
	}
	return &pieceReader{f: f, st: st, h: h, sums: sums, size: md.Pieces.Length, length: a.b.Length,
		buf: make([]byte, min(md.Pieces.Length, a.b.Length))}, true
}

// pieceReader reads a bitstream piece by piece, each from the file when
// it holds it, else from the package.
type pieceReader struct {
	f      *os.File
	st     *ziprange.Stored
	h      hash.Hash
	sums   []string
	size   int64 // a piece's bytes
	length int64 // the bitstream's
	next   int   // the piece to read next
	buf    []byte
	cur    []byte // what is left of the piece read
	sum    []byte
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.cur) == 0 {
		if r.next == len(r.sums) {
			return 0, io.EOF
		}
		if err := r.piece(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// piece reads the next piece into buf.
func (r *pieceReader) piece() error {
	off := int64(r.next) * r.size
	b := r.buf[:min(r.size, r.length-off)]
	if n, _ := r.f.ReadAt(b, off); n != len(b) || !r.holds(b, r.sums[r.next]) {
		if err := r.st.Span(b, off); err != nil {
			return err
		}
	}
	r.cur = b
	r.next++
	return nil
}

// holds says whether b's hash is sum.
func (r *pieceReader) holds(b []byte, sum string) bool {
	r.h.Reset()
	r.h.Write(b)
	r.sum = r.h.Sum(r.sum[:0])
	return hex.EncodeToString(r.sum) == sum
}

func (r *pieceReader) Close() error { return r.f.Close() }
