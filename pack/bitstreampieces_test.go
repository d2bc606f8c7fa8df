package pack

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/sharedtest"
	"github.com/rsdump/rsdump/resourcesync"
)

// TestBitstreamPieces: a bitstream of more than 4 MiB gets its piece
// hashes in its manifest entry, each piece's sha-256 (pieces of 1 MiB,
// the last shorter), whether it was read in memory (up to 8 MiB) or
// streamed; one of 4 MiB or less gets none. The detached manifest is
// byte for byte the one in the package, validates against the schema,
// and resync reads it.
func TestBitstreamPieces(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	files := map[string][]byte{}
	for name, size := range map[string]int{"streamed.bin": 9<<20 + 123, "inmemory.bin": 5<<20 + 7, "edge.bin": 4 << 20, "small.txt": 1000} {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		files[name] = b
	}
	src := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(src, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, out := mustPack(t, src, loopbackOptions())
	detached := filepath.Join(out, res.Packages[0].Manifest)
	m := readFile(t, detached)
	if inZip := zipManifest(t, filepath.Join(out, res.Packages[0].Name)); !bytes.Equal(m, inZip) {
		t.Fatal("the detached manifest is not the package's")
	}
	dec, err := resourcesync.NewDecoder(bytes.NewReader(m))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = dec.Each(func(u resourcesync.URL) error {
		n++
		name := u.Loc[strings.LastIndex(u.Loc, "/")+1:]
		data := files[name]
		p := u.MD.Pieces
		if len(data) <= 4<<20 {
			if p != nil {
				t.Errorf("%s (%d bytes) has pieces", name, len(data))
			}
			return nil
		}
		if p == nil || p.Length != 1<<20 {
			t.Fatalf("%s (%d bytes): pieces %+v", name, len(data), p)
		}
		alg, sums, err := p.Sums(int64(len(data)))
		if err != nil || alg != "sha-256" {
			t.Fatalf("%s: %v %v", name, alg, err)
		}
		for i, s := range sums {
			piece := data[i<<20 : min((i+1)<<20, len(data))]
			if want := sha256.Sum256(piece); s != hex.EncodeToString(want[:]) {
				t.Errorf("%s: piece %d is not its sha-256", name, i)
			}
		}
		return nil
	})
	if err != nil || n != len(files) {
		t.Fatalf("%d entries: %v", n, err)
	}
	xmllint(t, detached, urlsetSchema)
	peer := sharedtest.NewResync(t)
	outp, err := peer.Run(context.Background(), t.TempDir(), "resync-sync", "--parse", "--sitemap", detached)
	if err != nil || !strings.Contains(outp, "Parsed resourcedump-manifest document with 4 entries") {
		t.Errorf("resync --parse: %v\n%s", err, outp)
	}
}

// zipManifest is the manifest inside the package at path.
func zipManifest(t *testing.T, path string) []byte {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	f, err := zr.Open("manifest.xml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
