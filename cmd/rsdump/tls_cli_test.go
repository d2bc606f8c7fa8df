package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/webtest"
)

// rsdump sync of a Source behind nginx over HTTP/2 with TLS, whose
// certificate a private CA signed: trusted through SSL_CERT_FILE (as
// docs/http.md says), refused without it, naming the certificate.
func TestSyncTLSWithCAFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	t.Parallel()
	ca := webtest.NewCA(t)
	addr := webtest.FreeAddr(t)
	src, out := t.TempDir(), t.TempDir()
	for i, body := range []string{"one", "two", "three"} {
		os.MkdirAll(filepath.Join(src, "d"), 0o755)
		os.WriteFile(filepath.Join(src, "d", string(rune('a'+i))+".txt"), []byte(body), 0o644)
	}
	base := "https://" + addr
	if code, _, stderr := rsdump(t, "pack", src, "-o", out, "--base-url", base+"/res/", "--dump-url", base+"/", "--source-description", "--quiet"); code != 0 {
		t.Fatalf("pack: %d %s", code, stderr)
	}
	webtest.Nginx(t, webtest.Site{Addr: addr, TLS: ca, Dirs: map[string]string{"/": out, "/res/": src}})
	bin := buildRsdump(t)
	sync := func(env ...string) (string, error) {
		dst := filepath.Join(t.TempDir(), "copy")
		cmd := exec.Command(bin, "sync", base+"/", "--dest", dst, "--quiet")
		cmd.Env = append(os.Environ(), env...)
		b, err := cmd.CombinedOutput()
		if err == nil {
			for i, body := range []string{"one", "two", "three"} {
				got, rerr := os.ReadFile(filepath.Join(dst, "d", string(rune('a'+i))+".txt"))
				if rerr != nil || string(got) != body {
					t.Errorf("copy of file %d: %q, %v", i, got, rerr)
				}
			}
		}
		return string(b), err
	}
	if outp, err := sync("SSL_CERT_FILE=" + ca.CAFile); err != nil {
		t.Fatalf("with SSL_CERT_FILE: %v\n%s", err, outp)
	}
	if outp, err := sync("SSL_CERT_FILE=/dev/null", "SSL_CERT_DIR=/nonexistent"); err == nil || !strings.Contains(outp, "certificate") {
		t.Errorf("without the CA: %v\n%s", err, outp)
	}
}
