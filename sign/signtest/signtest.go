// Package signtest gives tests OpenPGP keys: made by the library in
// memory (fast, no tool needed), or by GnuPG in a temporary GNUPGHOME, the
// keys a user has, with gpg to sign and verify beside rsdump.
package signtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Key is a key pair in files: the secret key (unprotected) and the public
// key, both armored.
type Key struct {
	Secret, Public string
	Fingerprint    string
}

// NewKey makes an Ed25519 key with the library and writes it under a
// temporary directory.
func NewKey(t testing.TB, name string) Key {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", name+"@example.org", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	k := Key{Secret: filepath.Join(dir, name+".sec.asc"), Public: filepath.Join(dir, name+".pub.asc")}
	k.Fingerprint = strings.ToUpper(fmtHex(e.PrimaryKey.Fingerprint))
	write(t, k.Secret, openpgp.PrivateKeyType, func(w *bytes.Buffer) error { return e.SerializePrivate(w, nil) })
	write(t, k.Public, openpgp.PublicKeyType, func(w *bytes.Buffer) error { return e.Serialize(w) })
	return k
}

func write(t testing.TB, path, blockType string, ser func(*bytes.Buffer) error) {
	t.Helper()
	var raw bytes.Buffer
	if err := ser(&raw); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w, err := armor.Encode(&b, blockType, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(raw.Bytes())
	w.Close()
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func fmtHex(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// GPG is GnuPG with a home of its own, removed with the test.
type GPG struct {
	t    testing.TB
	Home string
}

// NewGPG returns gpg in a temporary GNUPGHOME, skipping the test, saying
// so, when gpg is missing (.ci/run installs gnupg).
func NewGPG(t testing.TB) *GPG {
	t.Helper()
	if _, err := exec.LookPath("gpg"); err != nil {
		t.Skip("gpg is missing (apt-get install gnupg): the OpenPGP interoperability test is not run")
	}
	// A short path: gpg-agent's socket lives in the home, and a socket's
	// path is limited to about 100 bytes.
	home, err := os.MkdirTemp("", "gpg")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(home, 0o700)
	g := &GPG{t: t, Home: home}
	t.Cleanup(func() {
		exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		os.RemoveAll(home)
	})
	return g
}

// Run runs gpg in its home, in batch mode, and returns what it printed;
// a failure fails the test.
func (g *GPG) Run(args ...string) string {
	g.t.Helper()
	out, err := g.Try(args...)
	if err != nil {
		g.t.Fatalf("gpg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// Try is Run that returns the error instead of failing the test.
func (g *GPG) Try(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "gpg", append([]string{"--homedir", g.Home, "--batch", "--yes", "--no-tty", "--pinentry-mode", "loopback", "--passphrase", ""}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// GenKey makes a key with gpg --quick-gen-key (algo "ed25519" or
// "rsa3072", no passphrase, no expiry) and exports it to files.
func (g *GPG) GenKey(uid, algo string) Key {
	g.t.Helper()
	g.Run("--quick-gen-key", uid, algo, "sign", "never")
	dir := g.t.TempDir()
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(uid))
	k := Key{Secret: filepath.Join(dir, name+".sec.asc"), Public: filepath.Join(dir, name+".pub.asc")}
	os.WriteFile(k.Secret, []byte(g.Run("--armor", "--export-secret-keys", uid)), 0o600)
	os.WriteFile(k.Public, []byte(g.Run("--armor", "--export", uid)), 0o644)
	for _, line := range strings.Split(g.Run("--with-colons", "--fingerprint", uid), "\n") {
		if f := strings.Split(line, ":"); len(f) > 9 && f[0] == "fpr" {
			k.Fingerprint = f[9]
			break
		}
	}
	return k
}

// DetachSign signs file with the key of uid, armored, as file.asc.
func (g *GPG) DetachSign(uid, file string) {
	g.t.Helper()
	g.Run("--local-user", uid, "--detach-sign", "--armor", "--output", file+".asc", file)
}

// Verify checks the detached signature sig of file with gpg, returning
// gpg's output and its error.
func (g *GPG) Verify(sig, file string) (string, error) {
	return g.Try("--verify", sig, file)
}

// Import adds the key in file to the home, as a Destination's user would
// before gpg --verify.
func (g *GPG) Import(file string) {
	g.t.Helper()
	g.Run("--import", file)
}
