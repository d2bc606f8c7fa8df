package iocount

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReaderCounts(t *testing.T) {
	t.Parallel()
	r := &Reader{R: iotest.HalfReader(strings.NewReader("twelve bytes"))}
	b, err := io.ReadAll(r)
	if err != nil || string(b) != "twelve bytes" || r.N != 12 {
		t.Fatalf("read %q, %v; N = %d, want 12", b, err, r.N)
	}
}

func TestWriterCountsWhatWasWritten(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := &Writer{W: &buf}
	io.WriteString(w, "abc")
	io.WriteString(w, "de")
	if w.N != 5 || buf.String() != "abcde" || w.Err != nil {
		t.Fatalf("N = %d, wrote %q", w.N, buf.String())
	}
	// A failed write counts only what the writer took.
	short := &Writer{W: limited{2}}
	if _, err := short.Write([]byte("xyz")); err == nil || short.N != 2 || short.Err != err {
		t.Fatalf("N = %d, err %v, Err %v; want 2 and the error in both", short.N, err, short.Err)
	}
}

type limited struct{ n int }

func (l limited) Write(p []byte) (int, error) {
	if len(p) > l.n {
		return l.n, io.ErrShortWrite
	}
	return len(p), nil
}
