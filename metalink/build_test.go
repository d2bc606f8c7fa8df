package metalink

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestFileFromReader(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{0, 1, 65535, 65536, 65537, 300000} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		// OneByteReader makes the copy see many short reads.
		f, err := FileFromReader("dir/p.zip", iotest.HalfReader(bytes.NewReader(data)), 64<<10)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		sum := sha256.Sum256(data)
		if *f.Size != int64(size) || f.Name != "dir/p.zip" {
			t.Errorf("size %d: got name %q size %d", size, f.Name, *f.Size)
		}
		if h, _ := f.WholeHash("sha-256"); h != hex.EncodeToString(sum[:]) {
			t.Errorf("size %d: whole hash %s", size, h)
		}
		p := f.Pieces[0]
		if want := directPieces(sha256.New, data, 64<<10); p.Type != "sha-256" || p.Length != 64<<10 || !slices.Equal(p.Hashes, want) {
			t.Errorf("size %d: pieces %s/%d %d hashes, want %d", size, p.Type, p.Length, len(p.Hashes), len(want))
		}
		f.URLs = []URL{{URL: "http://127.0.0.1/p.zip"}}
		if ps := (&Metalink{Files: []File{*f}}).Validate(); len(ps) > 0 {
			t.Errorf("size %d: %v", size, ps)
		}
	}
}

func TestFileFromReaderErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	cases := []struct {
		name   string
		r      io.Reader
		length int64
		want   string
	}{
		{"../p.zip", strings.NewReader("x"), 1024, "traversal"},
		{"p.zip", strings.NewReader("x"), 0, "not positive"},
		{"p.zip", iotest.ErrReader(boom), 1024, "boom"},
	}
	for _, c := range cases {
		f, err := FileFromReader(c.name, c.r, c.length)
		if err == nil || f != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FileFromReader(%q, %d) = %v, %v; want error containing %q", c.name, c.length, f, err, c.want)
		}
	}
}
