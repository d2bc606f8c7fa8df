package transfer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/mirrortest"
)

func TestMain(m *testing.M) {
	fastRetries = true
	os.Exit(m.Run())
}

// payload is deterministic random content of n bytes.
func payload(n int, seed uint64) []byte {
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// fileFor describes data with sha-256 piece hashes of plen bytes.
func fileFor(name string, data []byte, plen int64, urls ...string) File {
	f := File{Name: name, Size: int64(len(data)), HashAlg: "sha-256", Hash: sha(data)}
	if plen > 0 {
		f.Pieces = Pieces{Type: "sha-256", Length: plen}
		for off := int64(0); off < int64(len(data)) || off == 0; off += plen {
			f.Pieces.Hashes = append(f.Pieces.Hashes, sha(data[off:min(off+plen, int64(len(data)))]))
			if off+plen >= int64(len(data)) {
				break
			}
		}
	}
	for i, u := range urls {
		f.Mirrors = append(f.Mirrors, Mirror{URL: u, Priority: i + 1})
	}
	return f
}

// serve starts a fake mirror of data, closed when the test ends.
func serve(t *testing.T, data []byte, opts ...mirrortest.Option) (*httptest.Server, *mirrortest.Mirror) {
	t.Helper()
	s, m := mirrortest.Server(bytes.NewReader(data), int64(len(data)), "f.bin", opts...)
	t.Cleanup(func() {
		s.CloseClientConnections()
		s.Close()
	})
	return s, m
}

// fastOptions keep tests in milliseconds; the caller may change them.
func fastOptions() Options {
	return Options{Connections: 8, PerMirror: 3, StallTimeout: 300 * time.Millisecond,
		MaxFailures: 6, SaveInterval: 20 * time.Millisecond}
}

// get downloads f into a fresh directory with a deadline.
func get(t *testing.T, o Options, dir string, files ...File) ([]*Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return New(o).Get(ctx, dir, files)
}

// mustMatch checks dir/name holds want and no .part or state remain.
func mustMatch(t *testing.T, dir, name string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: content differs (%d bytes, want %d)", name, len(got), len(want))
	}
	for _, ext := range []string{".part", ".rsdump-state"} {
		if _, err := os.Stat(filepath.Join(dir, name+ext)); err == nil {
			t.Errorf("%s%s left behind", name, ext)
		}
	}
}

func mirrorResult(t *testing.T, r *Result, url string) MirrorResult {
	t.Helper()
	for _, m := range r.Mirrors {
		if m.URL == url {
			return m
		}
	}
	t.Fatalf("no result for mirror %s", url)
	return MirrorResult{}
}

// eachPath runs f with pieces read into memory before they are checked
// and written (runBuffered), and again with pieces streamed into the file
// as they arrive, the path taken by pieces over maxBuffered.
func eachPath(t *testing.T, f func(t *testing.T)) {
	t.Run("buffered", f)
	t.Run("streamed", func(t *testing.T) {
		defer func(v int64) { maxBuffered = v }(maxBuffered)
		maxBuffered = 0
		f(t)
	})
}
