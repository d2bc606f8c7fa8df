package unpack

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestListSortCodecs: the records the list survey's sorts spill read back
// as written, a clean end is io.EOF, and a record cut anywhere inside is
// io.ErrUnexpectedEOF, never taken for the end of the sort.
func TestListSortCodecs(t *testing.T) {
	t.Parallel()
	targets := []targetRec{{"a", 0}, {"dir/ü b.txt", 1 << 40}, {string(bytes.Repeat([]byte("x"), 300)), 7}}
	var b []byte
	var ends []int // the offsets where a record ends
	for i := range targets {
		b = appendTargetRec(b, &targets[i])
		ends = append(ends, len(b))
	}
	checkCodec(t, "target", b, ends, readTargetRec, targets)

	overs := []override{{0, -1}, {5, 3}, {1 << 33, 1 << 32}}
	b, ends = nil, nil
	for i := range overs {
		b = appendOverride(b, &overs[i])
		ends = append(ends, len(b))
	}
	checkCodec(t, "override", b, ends, readOverride, overs)
}

func checkCodec[T comparable](t *testing.T, what string, b []byte, ends []int, read func(*bufio.Reader) (T, error), want []T) {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(b))
	for i, w := range want {
		if got, err := read(r); err != nil || got != w {
			t.Fatalf("%s %d: %v, %v, want %v", what, i, got, err, w)
		}
	}
	if _, err := read(r); err != io.EOF {
		t.Fatalf("%s: after the last record %v, want io.EOF", what, err)
	}
	for cut := 1; cut < len(b); cut++ {
		r := bufio.NewReader(bytes.NewReader(b[:cut]))
		var err error
		for n := 0; err == nil; n++ {
			_, err = read(r)
		}
		atEnd := false
		for _, e := range ends {
			atEnd = atEnd || e == cut
		}
		if atEnd && err != io.EOF || !atEnd && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s cut at %d of %d: %v", what, cut, len(b), err)
		}
	}
}
