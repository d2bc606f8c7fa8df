package metalink

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/sharedtest"
)

// fuzzLimits are small enough for the fuzzer to reach every one.
var fuzzLimits = Limits{MaxBytes: 1 << 20, MaxTokenBytes: 4 << 10, MaxFiles: 8, MaxPieceHashes: 64, MaxDepth: 16}

// FuzzDecode feeds Decode documents of any bytes, Metalink 4 and 3, whole
// and in chunks of any size, and checks that it never panics, that how the
// bytes arrive changes nothing, that it always explains a missing document
// with a *finding.Finding, that it holds no more files and piece hashes
// than its limits allow, and that any document it accepts survives Encode
// and a second Decode unchanged.
func FuzzDecode(f *testing.F) {
	for _, dir := range []string{filepath.Join(sharedtest.Dir(), "metalink", "corpus"), "testdata"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, name := range files {
			if data, err := os.ReadFile(name); err == nil && filepath.Ext(name) != ".md" {
				f.Add(data, uint8(0))
			}
		}
	}
	// In code, for when the shared corpus is not there: one of each version.
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	f.Add([]byte(`<metalink version="3.0" xmlns="http://www.metalinker.org/"><files><file name="a"><size>3</size>`+
		`<verification><hash type="sha256">`+abc+`</hash><pieces type="sha256" length="2"><hash piece="0">`+abc+`</hash><hash piece="1">`+abc+`</hash></pieces></verification>`+
		`<resources><url type="http" preference="90">http://127.0.0.1/a</url></resources></file></files></metalink>`), uint8(3))
	f.Add([]byte(v4(`<size>3</size><hash type="sha-256">`+abc+`</hash><pieces type="sha-256" length="2"><hash>`+abc+`</hash><hash>`+abc+`</hash></pieces>`+
		`<url priority="1" location="nl">http://127.0.0.1/a</url><metaurl mediatype="torrent">http://127.0.0.1/a.torrent</metaurl>`)), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		m, ps, err := DecodeLimits(bytes.NewReader(data), fuzzLimits)
		m2, ps2, err2 := DecodeLimits(&chunkReader{b: data, n: int(chunk) + 1}, fuzzLimits)
		if !reflect.DeepEqual(m, m2) || fmt.Sprint(ps) != fmt.Sprint(ps2) || fmt.Sprint(err) != fmt.Sprint(err2) {
			t.Fatalf("read whole: %v, %v; in chunks of %d: %v, %v", ps, err, int(chunk)+1, ps2, err2)
		}
		var p *finding.Finding
		switch {
		case m == nil && !asProblem(err, &p):
			t.Fatalf("no document and error %v is not a *finding.Finding", err)
		case m == nil:
			return
		case (err != nil) != finding.HasErrors(ps):
			t.Fatalf("error %v does not match problems %v", err, ps)
		}
		checkLimits(t, m)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := Encode(&buf, m); err != nil {
			t.Fatalf("an accepted document does not encode: %v", err)
		}
		m2, ps2, err = Decode(&buf)
		if err != nil {
			t.Fatalf("re-decoding gave %v\n%s", err, buf.Bytes())
		}
		for _, p := range ps2 {
			if !hasCode(ps, p.Code) {
				t.Fatalf("encoding introduced a problem: %v (first pass %v)\n%s", p, ps, buf.Bytes())
			}
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("model changed on a round trip\nfirst: %+v\nthen:  %+v", m, m2)
		}
	})
}

// checkLimits fails when m holds more files or piece hashes than
// fuzzLimits allow.
func checkLimits(t *testing.T, m *Metalink) {
	hashes := 0
	for _, f := range m.Files {
		for _, p := range f.Pieces {
			hashes += len(p.Hashes)
		}
	}
	if len(m.Files) > fuzzLimits.MaxFiles || hashes > fuzzLimits.MaxPieceHashes {
		t.Fatalf("%d files, %d piece hashes held; limits %d, %d", len(m.Files), hashes, fuzzLimits.MaxFiles, fuzzLimits.MaxPieceHashes)
	}
}

// chunkReader hands b out n bytes at a time at most.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}
