package resourcesync

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/sharedtest"
)

// sharedPath returns a path under the shared directory (sharedtest).
func sharedPath(t testing.TB, elem ...string) string {
	t.Helper()
	return sharedtest.Path(t, elem...)
}

// peerFiles returns the XML documents written by resync.
func peerFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(sharedPath(t, "peers", "resync", "rd-cli"), "*.xml"))
	if err != nil || len(files) == 0 {
		t.Skipf("no resync peer documents found (%v)", err)
	}
	return files
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UTC()
}

// encodeDoc writes a whole document and returns its bytes.
func encodeDoc(t testing.TB, h Header, entries ...URL) []byte {
	t.Helper()
	var buf bytes.Buffer
	e, err := NewEncoder(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range entries {
		if err := e.Encode(u); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// decodeDoc reads a whole document.
func decodeDoc(data []byte) (Header, []URL, error) {
	d, err := NewDecoder(bytes.NewReader(data))
	if err != nil {
		return Header{}, nil, err
	}
	var entries []URL
	for {
		u, err := d.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return d.Header(), entries, nil
			}
			return d.Header(), entries, err
		}
		entries = append(entries, u)
	}
}
