package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/pack"
)

// mlTree writes files (name → content) into a new directory.
func mlTree(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mlRandom(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// mlDecode reads a Metalink that must have no error-level problem.
func mlDecode(t *testing.T, path string) *metalink.Metalink {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, ps, err := metalink.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v (%v)", path, err, ps)
	}
	return m
}

// mlPieces computes piece hashes the obvious way.
func mlPieces(data []byte, length int) []string {
	var hs []string
	for off := 0; off == 0 || off < len(data); off += length {
		sum := sha256.Sum256(data[off:min(off+length, len(data))])
		hs = append(hs, hex.EncodeToString(sum[:]))
	}
	return hs
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// checkMLFile compares a <file> with the data it describes.
func checkMLFile(t *testing.T, f metalink.File, name string, data []byte, pieceLen int) {
	t.Helper()
	if f.Name != name || f.Size == nil || *f.Size != int64(len(data)) {
		t.Errorf("file %q size %v, want %q %d", f.Name, f.Size, name, len(data))
	}
	if h, _ := f.WholeHash("sha-256"); h != sha256Hex(data) {
		t.Errorf("%s: sha-256 %s, want %s", name, h, sha256Hex(data))
	}
	if len(f.Pieces) != 1 || f.Pieces[0].Length != int64(pieceLen) || !slices.Equal(f.Pieces[0].Hashes, mlPieces(data, pieceLen)) {
		t.Errorf("%s: pieces %+v, want %d-byte sha-256 pieces", name, f.Pieces, pieceLen)
	}
}

func TestMetalinkFiles(t *testing.T) {
	t.Parallel()
	a, b := mlRandom(1, 300000), []byte{}
	dir := mlTree(t, map[string][]byte{"a b.bin": a, "empty": b})
	out := filepath.Join(t.TempDir(), "out.meta4")
	code, _, stderr := rsdump(t, "metalink", filepath.Join(dir, "a b.bin"), filepath.Join(dir, "empty"), "-o", out,
		"--piece-length", "65536", "--mirror", "http://127.0.0.11/d,priority=1,location=DE", "--mirror", "https://127.0.0.32/x/")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m := mlDecode(t, out)
	if len(m.Files) != 2 || m.Generator != "rsdump" {
		t.Fatalf("%d files, generator %q", len(m.Files), m.Generator)
	}
	checkMLFile(t, m.Files[0], "a b.bin", a, 65536)
	checkMLFile(t, m.Files[1], "empty", b, 65536)
	want := []metalink.URL{
		{URL: "http://127.0.0.11/d/a%20b.bin", Location: "de", Priority: 1},
		{URL: "https://127.0.0.32/x/a%20b.bin"},
	}
	if !reflect.DeepEqual(m.Files[0].URLs, want) {
		t.Errorf("urls %+v, want %+v", m.Files[0].URLs, want)
	}
}

// TestMetalinkDefaultPieceLength: without --piece-length each file gets
// DefaultPieceLength of its size; the document goes to stdout.
func TestMetalinkDefaultPieceLength(t *testing.T) {
	t.Parallel()
	data := mlRandom(2, 600000)
	dir := mlTree(t, map[string][]byte{"p.zip": data})
	code, stdout, stderr := rsdump(t, "metalink", "-q", filepath.Join(dir, "p.zip"), "--mirror", "http://127.0.0.10/")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	m, ps, err := metalink.Decode(strings.NewReader(stdout))
	if err != nil || len(ps) > 0 {
		t.Fatalf("%v %v", err, ps)
	}
	checkMLFile(t, m.Files[0], "p.zip", data, int(metalink.DefaultPieceLength(int64(len(data)))))
}

func TestMetalinkUsageErrors(t *testing.T) {
	t.Parallel()
	dir := mlTree(t, map[string][]byte{"a": []byte("a")})
	other := mlTree(t, map[string][]byte{"a": []byte("b")})
	a := filepath.Join(dir, "a")
	out := filepath.Join(t.TempDir(), "out.meta4")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"metalink", "--help"}, exitOK, "Exit status"},
		{[]string{"metalink"}, exitUsage, "needs FILE"},
		{[]string{"metalink", a}, exitUsage, "--mirror"},
		{[]string{"metalink", a, filepath.Join(other, "a"), "--mirror", "http://m/"}, exitUsage, "same name"},
		{[]string{"metalink", a, "--mirror", "ftp:x"}, exitUsage, "mirror"},
		{[]string{"metalink", a, "--mirror", "http://m/,priority=0"}, exitUsage, "priority"},
		{[]string{"metalink", a, "--mirror", "http://m/", "--piece-length", "-1"}, exitUsage, "--piece-length"},
		{[]string{"metalink", a, "--mirror", "http://m/", "--piece-length", "1000"}, exitUsage, "at least 16384"},
		{[]string{"metalink", filepath.Join(dir, "missing.xml")}, exitFailed, "missing.xml: no such file"},
		{[]string{"metalink", "--check"}, exitUsage, "at least one"},
		{[]string{"metalink", "--check", "x.meta4", "-o", out}, exitUsage, "--check takes no"},
		{[]string{"metalink", filepath.Join(dir, "missing"), "--mirror", "http://m/", "-o", out}, exitFailed, "missing"},
		{[]string{"metalink", dir, "--mirror", "http://m/", "-o", out}, exitFailed, "not a regular file"},
	}
	for _, c := range cases {
		code, stdout, stderr := rsdump(t, c.args...)
		if code != c.code || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("rsdump %q: exit %d, want %d; output %q lacks %q", c.args, code, c.code, stdout+stderr, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed run left", out)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*")); len(left) > 0 {
		t.Error("temporary files left:", left)
	}
}

func TestMetalinkCanceled(t *testing.T) {
	t.Parallel()
	dir := mlTree(t, map[string][]byte{"a": mlRandom(3, 1000)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb strings.Builder
	code := run(ctx, []string{"metalink", filepath.Join(dir, "a"), "--mirror", "http://m/", "-o", filepath.Join(dir, "x.meta4")}, &out, &errb)
	if code != exitCanceled {
		t.Errorf("exit %d, want %d: %s", code, exitCanceled, errb.String())
	}
}

// mlPack packs src with Metalink options and returns the result and the
// output directory.
func mlPack(t *testing.T, src string, o pack.Options) (*pack.Result, string) {
	t.Helper()
	out := t.TempDir()
	res, err := pack.Pack(context.Background(), src, out, o)
	if err != nil {
		t.Fatal(err)
	}
	return res, out
}
