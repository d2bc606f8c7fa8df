package sign_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/rsdump/rsdump/sign"
	"github.com/rsdump/rsdump/sign/signtest"
)

var doc = []byte(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>
`)

func signer(t *testing.T, k signtest.Key, valid time.Duration) *sign.Signer {
	t.Helper()
	s, err := sign.LoadSigner(k.Secret, nil, valid)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func keyring(t *testing.T, paths ...string) *sign.Keyring {
	t.Helper()
	k, err := sign.LoadKeyring(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func refused(t *testing.T, err error, want sign.Reason, words string) {
	t.Helper()
	var se *sign.Error
	if !errors.As(err, &se) || se.Reason != want {
		t.Fatalf("error %v, want a refusal of reason %d", err, want)
	}
	if !strings.Contains(err.Error(), words) {
		t.Fatalf("error %q does not say %q", err, words)
	}
}

func TestSignVerify(t *testing.T) {
	t.Parallel()
	k := signtest.NewKey(t, "source")
	s := signer(t, k, 0)
	sig, err := s.Sign(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(sig, []byte("-----BEGIN PGP SIGNATURE-----")) {
		t.Fatalf("not armored:\n%s", sig)
	}
	res, err := keyring(t, k.Public).Verify(bytes.NewReader(doc), sig)
	if err != nil {
		t.Fatal(err)
	}
	if res.Fingerprint != k.Fingerprint || !res.Expires.IsZero() {
		t.Fatalf("result %+v, want fingerprint %s and no expiry", res, k.Fingerprint)
	}
	// The secret key file trusts as its public part.
	if _, err := keyring(t, k.Secret).Verify(bytes.NewReader(doc), sig); err != nil {
		t.Fatal(err)
	}
	changed := bytes.Replace(doc, []byte("urlset"), []byte("urlsex"), 1)
	_, err = keyring(t, k.Public).Verify(bytes.NewReader(changed), sig)
	refused(t, err, sign.Bad, "does not match")
}

func TestUntrustedKey(t *testing.T) {
	t.Parallel()
	a, b := signtest.NewKey(t, "a"), signtest.NewKey(t, "b")
	sig, err := signer(t, b, 0).Sign(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	_, err = keyring(t, a.Public).Verify(bytes.NewReader(doc), sig)
	refused(t, err, sign.Untrusted, b.Fingerprint)
	// Any key of the keyring will do.
	if _, err := keyring(t, a.Public, b.Public).Verify(bytes.NewReader(doc), sig); err != nil {
		t.Fatal(err)
	}
}

func TestExpired(t *testing.T) {
	t.Parallel()
	k := signtest.NewKey(t, "source")
	sig, err := signer(t, k, 1500*time.Millisecond).Sign(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	res, err := keyring(t, k.Public).Verify(bytes.NewReader(doc), sig)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Expires.Sub(res.Created); got != 2*time.Second {
		t.Fatalf("lifetime %v, want 2s (1.5 s rounded up)", got)
	}
	time.Sleep(time.Until(res.Expires.Add(1100 * time.Millisecond)))
	_, err = keyring(t, k.Public).Verify(bytes.NewReader(doc), sig)
	refused(t, err, sign.Expired, "expired at "+res.Expires.UTC().Format(time.RFC3339))
}

// TestSHA1Refused: a signature whose hash is SHA-1 is refused, naming the
// hash, before it is checked (the library writes none: the packet of a
// good one has its hash algorithm byte set to SHA-1's, 2; gpg's own
// SHA-1 signature is refused in the gpg interoperability test).
func TestSHA1Refused(t *testing.T) {
	t.Parallel()
	k := signtest.NewKey(t, "old")
	sig, err := signer(t, k, 0).Sign(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	block, err := armor.Decode(bytes.NewReader(sig))
	if err != nil {
		t.Fatal(err)
	}
	body := must(io.ReadAll(block.Body))
	// A version 4 binary signature: 4, 0, the key's algorithm, the hash's.
	i := bytes.Index(body[:8], []byte{4, 0})
	if i < 0 || body[i+3] != 8 {
		t.Fatalf("no version 4 SHA-256 signature packet at the start of % x", body[:8])
	}
	body[i+3] = 2
	_, err = keyring(t, k.Public).Verify(bytes.NewReader(doc), body)
	refused(t, err, sign.WeakHash, "SHA-1")
}

func TestMalformed(t *testing.T) {
	t.Parallel()
	k := signtest.NewKey(t, "source")
	ring := keyring(t, k.Public)
	for name, sig := range map[string]string{
		"empty":   "",
		"text":    "hello",
		"armored": "-----BEGIN PGP SIGNATURE-----\n\nAAAA\n-----END PGP SIGNATURE-----\n",
		"a key":   string(must(os.ReadFile(k.Public))),
	} {
		_, err := ring.Verify(bytes.NewReader(doc), []byte(sig))
		var se *sign.Error
		if !errors.As(err, &se) || se.Reason != sign.Malformed && se.Reason != sign.Bad {
			t.Errorf("%s: error %v, want a malformed signature refused", name, err)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestSignSHA256: a signature made from a SHA-256 state of the message
// verifies over the message, and leaves the state as it was.
func TestSignSHA256(t *testing.T) {
	t.Parallel()
	k := signtest.NewKey(t, "source")
	s := signer(t, k, time.Hour)
	data := bytes.Repeat([]byte("package bytes "), 10000)
	h := sha256.New()
	h.Write(data)
	before := h.Sum(nil)
	sig, err := s.SignSHA256(h)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Sum(nil), before) {
		t.Fatal("the hash state changed")
	}
	if _, err := keyring(t, k.Public).Verify(bytes.NewReader(data), sig); err != nil {
		t.Fatal(err)
	}
	_, err = keyring(t, k.Public).Verify(bytes.NewReader(data[1:]), sig)
	refused(t, err, sign.Bad, "does not match")
}

func TestKeyErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.asc")
	os.WriteFile(bad, []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxx\n-----END PGP PUBLIC KEY BLOCK-----\n"), 0o644)
	if _, err := sign.LoadKeyring(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad key file: error %v, want one naming it", err)
	}
	if _, err := sign.LoadKeyring(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing key file was taken")
	}
	k := signtest.NewKey(t, "source")
	if _, err := sign.LoadSigner(k.Public, nil, 0); err == nil || !strings.Contains(err.Error(), "no secret key") {
		t.Errorf("a public key to sign with: error %v", err)
	}
}

// TestPassphrase: a protected secret key signs only with its passphrase.
func TestPassphrase(t *testing.T) {
	t.Parallel()
	k := signtest.NewKey(t, "source")
	el, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(must(os.ReadFile(k.Secret))))
	if err != nil {
		t.Fatal(err)
	}
	if err := el[0].EncryptPrivateKeys([]byte("correct horse"), nil); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := el[0].SerializePrivateWithoutSigning(&b, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sign.ParseSigner(b.Bytes(), nil, 0); !errors.Is(err, sign.ErrPassphrase) {
		t.Errorf("no passphrase: error %v", err)
	}
	if _, err := sign.ParseSigner(b.Bytes(), []byte("wrong"), 0); !errors.Is(err, sign.ErrPassphrase) {
		t.Errorf("a wrong passphrase: error %v", err)
	}
	s, err := sign.ParseSigner(b.Bytes(), []byte("correct horse"), 0)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := s.Sign(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keyring(t, k.Public).Verify(bytes.NewReader(doc), sig); err != nil {
		t.Fatal(err)
	}
}

func TestLoc(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/data/resourcelist.xml":                    "/data/resourcelist.xml.asc",
		"http://127.0.0.1/rs/capabilitylist.xml":    "http://127.0.0.1/rs/capabilitylist.xml.asc",
		"http://127.0.0.1/.well-known/resourcesync": "http://127.0.0.1/.well-known/resourcesync.asc",
		"http://127.0.0.1/list?part=2":              "http://127.0.0.1/list.asc?part=2",
		"s3://bucket/rs/resourcedump.xml":           "s3://bucket/rs/resourcedump.xml.asc",
	} {
		if got := sign.Loc(in); got != want {
			t.Errorf("Loc(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzVerify: whatever the signature bytes, Verify returns (never
// panics), and accepts none that the key did not make over the document.
func FuzzVerify(f *testing.F) {
	k := signtest.NewKey(f, "fuzz")
	s, err := sign.LoadSigner(k.Secret, nil, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	good, err := s.Sign(bytes.NewReader(doc))
	if err != nil {
		f.Fatal(err)
	}
	ring, err := sign.LoadKeyring(k.Public)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(""))
	f.Add([]byte("-----BEGIN PGP SIGNATURE-----\n\n-----END PGP SIGNATURE-----\n"))
	f.Add(must(os.ReadFile(k.Public)))
	f.Fuzz(func(t *testing.T, sig []byte) {
		res, err := ring.Verify(bytes.NewReader(doc), sig)
		if err == nil && res.Fingerprint != k.Fingerprint {
			t.Fatalf("accepted a signature by %q", res.Fingerprint)
		}
		sign.ParseKeyring(sig)
	})
}

// TestEitherOfTwoSignatures: a signature file holding signatures by two
// keys (gpg -u OLD -u NEW, a Source rotating its key) verifies with a
// keyring that holds either key.
func TestEitherOfTwoSignatures(t *testing.T) {
	t.Parallel()
	oldKey, newKey := signtest.NewKey(t, "old"), signtest.NewKey(t, "new")
	var both []byte
	for _, k := range []signtest.Key{oldKey, newKey} {
		sig, err := signer(t, k, 0).Sign(bytes.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		block, err := armor.Decode(bytes.NewReader(sig))
		if err != nil {
			t.Fatal(err)
		}
		both = append(both, must(io.ReadAll(block.Body))...)
	}
	for _, k := range []signtest.Key{oldKey, newKey} {
		res, err := keyring(t, k.Public).Verify(bytes.NewReader(doc), both)
		if err != nil || res.Fingerprint != k.Fingerprint {
			t.Errorf("trusting %s: %+v, %v", k.Fingerprint, res, err)
		}
	}
}

// TestBinaryKeys: key files without armor (gpg --export, gpg
// --export-secret-keys) sign and trust as armored ones do.
func TestBinaryKeys(t *testing.T) {
	t.Parallel()
	k := signtest.NewKey(t, "source")
	dir := t.TempDir()
	unarmor := func(path string) string {
		block, err := armor.Decode(bytes.NewReader(must(os.ReadFile(path))))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, filepath.Base(path)+".gpg")
		os.WriteFile(out, must(io.ReadAll(block.Body)), 0o600)
		return out
	}
	s, err := sign.LoadSigner(unarmor(k.Secret), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := s.Sign(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := keyring(t, unarmor(k.Public)).Verify(bytes.NewReader(doc), sig); err != nil || res.Fingerprint != k.Fingerprint {
		t.Fatalf("%+v, %v", res, err)
	}
}

// BenchmarkSignDocument and BenchmarkVerifyDocument: the cost of one
// document of 5 MB (a Resource List of some 20,000 entries), what pack
// --sign adds per document and sync --trust per document read.
func BenchmarkSignDocument(b *testing.B) {
	s, _ := benchKey(b)
	data := bytes.Repeat([]byte("<url><loc>http://127.0.0.1/res/d0000/f000000.bin</loc></url>\n"), 5<<20/62)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := s.Sign(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyDocument(b *testing.B) {
	s, ring := benchKey(b)
	data := bytes.Repeat([]byte("<url><loc>http://127.0.0.1/res/d0000/f000000.bin</loc></url>\n"), 5<<20/62)
	sig, err := s.Sign(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ring.Verify(bytes.NewReader(data), sig); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSignPackage: a package's .meta4 signature, from its hash state.
func BenchmarkSignPackage(b *testing.B) {
	s, _ := benchKey(b)
	h := sha256.New()
	h.Write(make([]byte, 1<<20))
	for b.Loop() {
		if _, err := s.SignSHA256(h); err != nil {
			b.Fatal(err)
		}
	}
}

func benchKey(b *testing.B) (*sign.Signer, *sign.Keyring) {
	k := signtest.NewKey(b, "bench")
	s, err := sign.LoadSigner(k.Secret, nil, 0)
	if err != nil {
		b.Fatal(err)
	}
	ring, err := sign.LoadKeyring(k.Public)
	if err != nil {
		b.Fatal(err)
	}
	return s, ring
}
