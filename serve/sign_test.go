package serve_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/serve"
	"github.com/rsdump/rsdump/sign"
	"github.com/rsdump/rsdump/sign/signtest"
)

// TestServesSignatures: the signature of every document of a signed pack,
// the Source Description's at /.well-known/resourcesync.asc too, goes out
// as application/pgp-signature, byte for byte; an .asc beside anything but
// a document is not served, and nothing new is advertised (the index
// page, a package's Link fields).
func TestServesSignatures(t *testing.T) {
	t.Parallel()
	key := signtest.NewKey(t, "source")
	signer, err := sign.LoadSigner(key.Secret, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ts, u := listen(t)
	src, dir := verifytest.Tree(t, files(6)), t.TempDir()
	o := pack.Options{BaseURL: u + "/res/", DumpURL: u + "/dump/", At: verifytest.Time, SourceDescription: true, Signer: signer,
		Metalink: &pack.MetalinkOptions{Mirrors: []layout.Mirror{{BaseURL: u + "/dump/"}}}}
	if _, err := pack.Pack(context.Background(), src, dir, o); err != nil {
		t.Fatal(err)
	}
	s := startSite(t, ts, u, src, dir, serve.Options{})
	ascs, _ := filepath.Glob(filepath.Join(dir, "*.asc"))
	if len(ascs) < 4 {
		t.Fatalf("signatures: %v", ascs)
	}
	for _, p := range ascs {
		resp, body := get(t, s.URL+"/dump/"+filepath.Base(p))
		if resp.StatusCode != 200 || string(body) != string(readFile(t, p)) || resp.Header.Get("Content-Type") != sign.MediaType {
			t.Errorf("%s: %s, %s, %d bytes", filepath.Base(p), resp.Status, resp.Header.Get("Content-Type"), len(body))
		}
	}
	resp, body := get(t, s.URL+"/.well-known/resourcesync.asc")
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "-----BEGIN PGP SIGNATURE-----") || resp.Header.Get("Content-Type") != sign.MediaType {
		t.Errorf("the Source Description's signature: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	os.WriteFile(filepath.Join(dir, "resourcedump-00001.zip.asc"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, pack.StateName+".asc"), []byte("x"), 0o644)
	for _, name := range []string{"resourcedump-00001.zip.asc", pack.StateName + ".asc"} {
		if resp, _ := get(t, s.URL+"/dump/"+name); resp.StatusCode != 404 {
			t.Errorf("%s: %s, want 404", name, resp.Status)
		}
	}
	if _, body := get(t, s.URL+"/dump/"); strings.Contains(string(body), ".asc") {
		t.Errorf("the index page names a signature:\n%s", body)
	}
	resp, _ = get(t, s.URL+"/dump/resourcedump-00001.zip")
	for _, l := range resp.Header.Values("Link") {
		if strings.Contains(l, ".asc") || strings.Contains(l, "signature") {
			t.Errorf("a package's Link advertises a signature: %s", l)
		}
	}
}
