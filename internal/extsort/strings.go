package extsort

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// AppendString appends s to b as a record field: its length, a uvarint,
// and its bytes. ReadString reads it back.
func AppendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// maxString bounds one string field ReadString takes, so that a damaged
// length cannot ask for gigabytes.
const maxString = 16 << 20

// ReadString reads a field AppendString wrote. It returns io.EOF, and
// only io.EOF, when r is at its end before the field; an end inside it
// is io.ErrUnexpectedEOF.
func ReadString(r *bufio.Reader) (string, error) {
	n, err := binary.ReadUvarint(r)
	switch {
	case err == io.EOF:
		return "", io.EOF
	case err != nil:
		return "", err
	case n > maxString:
		return "", fmt.Errorf("a string of %d bytes in a run file", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", NoEOF(err)
	}
	return string(b), nil
}

// NoEOF turns an end of file met inside a record (after its first
// field) into io.ErrUnexpectedEOF: only a run's clean end is io.EOF.
func NoEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Strings stores string records, each a field of AppendString.
var Strings = Codec[string]{
	Append: func(b []byte, s *string) []byte { return AppendString(b, *s) },
	Read:   ReadString,
}
