package transfer

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sha384(b []byte) string {
	s := sha512.Sum384(b)
	return hex.EncodeToString(s[:])
}

// meta4 writes a Metalink 4 document for one file, name f.bin, with the
// given <hash> and <pieces> elements, into a temporary file.
func meta4(t *testing.T, size int, elems string, urls ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n"+
		"<file name=\"f.bin\"><size>%d</size>%s", size, elems)
	for i, u := range urls {
		fmt.Fprintf(&b, "<url priority=\"%d\">%s/f.bin</url>", i+1, u)
	}
	b.WriteString("</file></metalink>\n")
	p := filepath.Join(t.TempDir(), "f.meta4")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// resolveGet resolves src and downloads what it lists into a fresh
// directory.
func resolveGet(t *testing.T, src string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := New(fastOptions())
	files, err := g.Resolve(ctx, src)
	if err != nil {
		return "", err
	}
	dir := t.TempDir()
	_, err = g.Get(ctx, dir, files)
	return dir, err
}

// A file with sha-384 and sha-256 whole-file hashes is checked against
// the sha-384 one: served bytes that differ fail, naming the hash, and
// never get the final name. (On main, neither was checked.)
func TestStrongestWholeHashChecked(t *testing.T) {
	t.Parallel()
	data := payload(200<<10, 60)
	bad := bytes.Clone(data)
	bad[1000] ^= 1
	s, _ := serve(t, bad)
	for _, typ := range []string{"sha-384", "SHA-384"} {
		src := meta4(t, len(data), fmt.Sprintf(`<hash type="sha-256">%s</hash><hash type="%s">%s</hash>`, sha(data), typ, sha384(data)), s.URL)
		dir, err := resolveGet(t, src)
		if !errors.Is(err, ErrFileHash) || !strings.Contains(err.Error(), "sha-384") {
			t.Fatalf("%s: Get = %v, want a sha-384 %v", typ, err, ErrFileHash)
		}
		if _, err := os.Stat(filepath.Join(dir, "f.bin")); err == nil {
			t.Errorf("%s: a file that failed its hash got its final name", typ)
		}
	}

	good, _ := serve(t, data)
	src := meta4(t, len(data), fmt.Sprintf(`<hash type="sha-256">%s</hash><hash type="sha-384">%s</hash>`, sha(data), sha384(data)), good.URL)
	dir, err := resolveGet(t, src)
	if err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "f.bin", data)
}

// Piece hashes of a type the old transfer registry lacked (sha-384) are
// checked too: wrong bytes never get the final name.
func TestStrongestPieceHashChecked(t *testing.T) {
	t.Parallel()
	data := payload(300<<10, 61)
	const plen = 64 << 10
	var pieces strings.Builder
	fmt.Fprintf(&pieces, `<pieces type="sha-384" length="%d">`, plen)
	for off := 0; off < len(data); off += plen {
		fmt.Fprintf(&pieces, "<hash>%s</hash>", sha384(data[off:min(off+plen, len(data))]))
	}
	pieces.WriteString("</pieces>")
	bad := bytes.Clone(data)
	bad[len(bad)-1] ^= 1
	s, _ := serve(t, bad)
	dir, err := resolveGet(t, meta4(t, len(data), pieces.String(), s.URL))
	if err == nil {
		t.Fatal("bytes that fail their sha-384 piece hash were accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "f.bin")); err == nil {
		t.Error("a file that failed its piece hashes got its final name")
	}
	good, _ := serve(t, data)
	dir, err = resolveGet(t, meta4(t, len(data), pieces.String(), good.URL))
	if err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "f.bin", data)
}

// A file whose only hashes rsdump cannot compute is refused before any
// request, with an error naming the file and the hash types.
func TestUnverifiableRefusedBeforeDownload(t *testing.T) {
	t.Parallel()
	data := payload(10<<10, 62)
	s, m := serve(t, data)
	zeros := strings.Repeat("0", 64)
	src := meta4(t, len(data), fmt.Sprintf(`<hash type="sha3-256">%s</hash><pieces type="x-whirl" length="65536"><hash>%s</hash></pieces>`, zeros, zeros), s.URL)
	dir, err := resolveGet(t, src)
	if !errors.Is(err, ErrUnverifiable) || !strings.Contains(err.Error(), "f.bin") ||
		!strings.Contains(err.Error(), "sha3-256") || !strings.Contains(err.Error(), "x-whirl") {
		t.Fatalf("Get = %v, want %v naming f.bin, sha3-256 and x-whirl", err, ErrUnverifiable)
	}
	if n := m.Requests.Load(); n != 0 {
		t.Errorf("%d requests made for a file that cannot be verified", n)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind %d files", len(entries))
	}

	// The same from a dump document's hash attribute.
	dump := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcedump" at="2024-01-01T00:00:00Z"/>
<url><loc>%s/f.bin</loc><rs:md hash="sha3-256:%s" length="%d" type="application/zip"/></url>
</urlset>
`, s.URL, zeros, len(data))
	p := filepath.Join(t.TempDir(), "resourcedump.xml")
	os.WriteFile(p, []byte(dump), 0o644)
	_, err = resolveGet(t, p)
	if !errors.Is(err, ErrUnverifiable) || !strings.Contains(err.Error(), "sha3-256") {
		t.Fatalf("Get of the dump = %v, want %v", err, ErrUnverifiable)
	}
	if n := m.Requests.Load(); n != 0 {
		t.Errorf("%d requests made for a dump entry that cannot be verified", n)
	}
}

// A File built by hand is checked the same way: the algorithm in any case,
// and a hash without an algorithm refused before any request.
func TestFileHashByHand(t *testing.T) {
	t.Parallel()
	data := payload(50<<10, 63)
	s, m := serve(t, data)
	f := fileFor("f.bin", data, 0, s.URL)
	f.HashAlg, f.Hash = "SHA-384", strings.ToUpper(sha384(data))
	dir := t.TempDir()
	if _, err := get(t, fastOptions(), dir, f); err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "f.bin", data)

	f.HashAlg = ""
	n := m.Requests.Load()
	if _, err := get(t, fastOptions(), t.TempDir(), f); err == nil || !strings.Contains(err.Error(), "without its algorithm") {
		t.Errorf("Get of a hash without an algorithm = %v", err)
	}
	if m.Requests.Load() != n {
		t.Error("requests made for a file refused")
	}
}
