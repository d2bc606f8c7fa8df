package metalink

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
)

// FileFromReader reads r to its end, once, and returns a File named name
// with the size read, the sha-256 of the whole stream and the sha-256 of
// every pieceLength-byte piece, both hashes fed from the same read. It has
// no URLs: the caller adds the places the file is published.
//
// pieceLength must be positive; DefaultPieceLength chooses one for a size
// known in advance. A read error is returned as is, so that it names what
// was read when r is an *os.File.
func FileFromReader(name string, r io.Reader, pieceLength int64) (*File, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if pieceLength <= 0 {
		return nil, fmt.Errorf("metalink: %s: piece length %d is not positive", name, pieceLength)
	}
	ph, err := NewPieceHasher("sha-256", pieceLength)
	if err != nil {
		return nil, err
	}
	whole := sha256.New()
	both := writerFunc(func(b []byte) (int, error) { ph.WriteAlong(whole, b); return len(b), nil })
	// The anonymous struct hides any WriterTo, so that the copy goes
	// through the large buffer rather than small reads.
	if _, err := io.CopyBuffer(both, struct{ io.Reader }{r}, make([]byte, 1<<20)); err != nil {
		return nil, err
	}
	size := ph.Size()
	return &File{
		Name:   name,
		Size:   &size,
		Hashes: []Hash{{Type: "sha-256", Value: hex.EncodeToString(whole.Sum(nil))}},
		Pieces: []Pieces{ph.Pieces()},
	}, nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
