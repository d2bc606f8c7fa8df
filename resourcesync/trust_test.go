package resourcesync

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/sign"
	"github.com/rsdump/rsdump/sign/signtest"
)

// TestOpenerTrust: under WithTrust the Opener hands over a document, a
// file or a URL, small or larger than what a spool holds in memory, byte
// for byte once its signature verified; one changed, or without its
// signature, is refused naming it; Unsigned reads without a signature.
func TestOpenerTrust(t *testing.T) {
	t.Parallel()
	key := signtest.NewKey(t, "source")
	s, err := sign.LoadSigner(key.Secret, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := sign.LoadKeyring(key.Public)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	docs := map[string][]byte{
		"small.xml": []byte(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>`),
		"large.xml": bytes.Repeat([]byte("<!-- a comment that fills the document -->\n"), 3*spoolMemory/40),
	}
	for name, b := range docs {
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
		sig, err := s.Sign(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name+sign.Suffix), sig, 0o644)
	}
	ctx := WithTrust(context.Background(), ring)
	read := func(o Opener, loc string) ([]byte, error) {
		rc, err := o.Open(ctx, loc)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	for name, want := range docs {
		for _, loc := range []string{filepath.Join(dir, name), srv.URL + "/" + name} {
			got, err := read(Opener{}, loc)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %d bytes, %v", loc, len(got), err)
			}
		}
	}
	os.WriteFile(filepath.Join(dir, "large.xml"), append(docs["large.xml"], ' '), 0o644)
	_, err = read(Opener{}, srv.URL+"/large.xml")
	var se *sign.Error
	if !errors.As(err, &se) || se.Reason != sign.Bad || !strings.HasPrefix(err.Error(), srv.URL+"/large.xml: not authenticated") {
		t.Errorf("a changed document: %v", err)
	}
	os.Remove(filepath.Join(dir, "small.xml"+sign.Suffix))
	if _, err := read(Opener{}, srv.URL+"/small.xml"); !errors.As(err, &se) || se.Reason != sign.Missing || !strings.Contains(err.Error(), "404") {
		t.Errorf("a document without its signature: %v", err)
	}
	if got, err := read(Opener{Unsigned: true}, srv.URL+"/small.xml"); err != nil || !bytes.Equal(got, docs["small.xml"]) {
		t.Errorf("Unsigned: %v", err)
	}
}
