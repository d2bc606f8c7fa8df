package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"

	"github.com/rsdump/rsdump/internal/sharedtest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/sign"
	"github.com/rsdump/rsdump/sign/signtest"
)

// signedSource is a Source on a loopback file server: the pack output at
// its root (Source Description included), the resources' base URL under
// /res/.
type signedSource struct {
	t   *testing.T
	srv *httptest.Server
	out string
	src string // the tree packed
}

func newSignedSource(t *testing.T, files map[string]string) *signedSource {
	s := &signedSource{t: t, out: t.TempDir(), src: verifytest.Tree(t, files)}
	s.srv = httptest.NewServer(http.FileServer(http.Dir(s.out)))
	t.Cleanup(s.srv.Close)
	return s
}

// pack packs the tree into the output with the flags given (--sign KEY,
// say), as a Source with Metalinks and a Source Description.
func (s *signedSource) pack(args ...string) {
	s.t.Helper()
	rsdumpOK(s.t, append([]string{"pack", s.src, "--base-url", s.srv.URL + "/res/", "--dump-url", s.srv.URL + "/",
		"-o", s.out, "--metalink", "--source-description", "--prune", "-q"}, args...)...)
}

func (s *signedSource) url() string { return s.srv.URL + "/" }

// snapshot is every file under dir, DIR/.rsdump included, by its hash;
// the lock file by its name only (its line names the last run holding
// it). A directory is listed too.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.IsDir():
			out[rel+"/"] = "dir"
		case rel == filepath.Join(".rsdump", "lock"):
			out[rel] = "lock"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			out[rel] = hex.EncodeToString(sum[:])
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %s changed (%s → %s)", what, k, v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: %s appeared", what, k)
		}
	}
}

// refused runs rsdump, which must fail naming every word of want.
func refused(t *testing.T, want []string, args ...string) string {
	t.Helper()
	code, stdout, stderr := rsdump(t, args...)
	msg := stdout + stderr
	if code == exitOK {
		t.Fatalf("rsdump %s: exit 0, want a refusal\n%s", strings.Join(args, " "), msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("rsdump %s: exit %d, the message does not say %q:\n%s", strings.Join(args, " "), code, w, msg)
		}
	}
	return msg
}

// documents lists the files pack writes as documents under out.
func documents(t *testing.T, out string) []string {
	t.Helper()
	var docs []string
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(out, p)
		if err == nil && d.Type().IsRegular() && layout.IsDocument(filepath.ToSlash(rel)) {
			docs = append(docs, p)
		}
		return nil
	})
	return docs
}

var meta4Signature = regexp.MustCompile(`(?s)<signature mediatype="application/pgp-signature">(.*?)</signature>`)

// TestSignedPackVerifiedByGPG: pack --sign with keys gpg made (Ed25519
// and RSA 3072) writes NAME.asc beside every document, the Source
// Description, lists, dump documents and detached manifests alike, and a
// <signature> for each package in its .meta4; gpg --verify accepts every
// one, the .meta4's against the package's bytes.
func TestSignedPackVerifiedByGPG(t *testing.T) {
	g := signtest.NewGPG(t)
	for _, algo := range []string{"ed25519", "rsa3072"} {
		t.Run(algo, func(t *testing.T) {
			key := g.GenKey("Source "+algo+" <"+algo+"@example.org>", algo)
			s := newSignedSource(t, verifytest.ExampleFiles(t))
			s.pack("--sign", key.Secret, "--max-package-size", "40000")
			docs := documents(t, s.out)
			if len(docs) < 6 || !slices.Contains(docs, filepath.Join(s.out, ".well-known", "resourcesync")) {
				t.Fatalf("documents: %v", docs)
			}
			for _, d := range docs {
				if out, err := g.Verify(d+sign.Suffix, d); err != nil || !strings.Contains(out, "Good signature") {
					t.Errorf("gpg --verify %s.asc: %v\n%s", d, err, out)
				}
			}
			metas, _ := filepath.Glob(filepath.Join(s.out, "*.meta4"))
			if len(metas) < 2 {
				t.Fatalf("Metalinks: %v", metas)
			}
			for _, m := range metas {
				b, _ := os.ReadFile(m)
				sig := meta4Signature.FindSubmatch(b)
				if sig == nil {
					t.Fatalf("%s: no package signature:\n%s", m, b)
				}
				asc := filepath.Join(t.TempDir(), "pkg.asc")
				os.WriteFile(asc, append(sig[1], '\n'), 0o644)
				pkg := strings.TrimSuffix(m, ".meta4")
				if out, err := g.Verify(asc, pkg); err != nil || !strings.Contains(out, "Good signature") {
					t.Errorf("gpg --verify of %s's signature: %v\n%s", pkg, err, out)
				}
			}
		})
	}
}

// TestTrustedSync: a Source signed by a key gpg made is synced exact with
// --trust; the key is pinned, and a later run without --trust requires
// it; a Source re-signed by another key (its content rewritten), or whose
// .asc files are removed, is refused on the pinned Destination, and on a
// fresh one, leaving each as it was; an explicit --trust NEWKEY takes the
// new key and says the pinned key changed.
func TestTrustedSync(t *testing.T) {
	g := signtest.NewGPG(t)
	key := g.GenKey("Source <source@example.org>", "ed25519")
	other := g.GenKey("Forger <forger@example.org>", "ed25519")
	files := verifytest.ExampleFiles(t)
	s := newSignedSource(t, files)
	s.pack("--sign", key.Secret)

	dst := filepath.Join(t.TempDir(), "copy")
	rsdumpOK(t, "sync", s.url(), "--dest", dst, "--trust", key.Public)
	sameTree(t, "trusted sync", s.src, dst)
	state, _ := os.ReadFile(filepath.Join(dst, ".rsdump", "state.json"))
	if !strings.Contains(string(state), key.Fingerprint) || !strings.Contains(string(state), `"version": 2`) {
		t.Fatalf("the key is not pinned:\n%s", state)
	}
	if out := rsdumpOK(t, "sync", "--dest", dst); !strings.Contains(out, "pinned") || !strings.Contains(out, key.Fingerprint) {
		t.Errorf("a run without --trust does not say it requires the pinned key:\n%s", out)
	}

	// The Source rewritten and signed by another key.
	forged := map[string]string{"evil.txt": "not the Source's"}
	for k, v := range files {
		forged[k] = "forged " + v
	}
	f := newSignedSource(t, forged)
	f.out, f.srv = s.out, s.srv // the same server and directory
	f.pack("--sign", other.Secret)
	before := snapshot(t, dst)
	refused(t, []string{"not authenticated", "not by a key trusted here", key.Fingerprint}, "sync", "--dest", dst)
	sameSnapshot(t, "pinned, another key", before, snapshot(t, dst))
	fresh := filepath.Join(t.TempDir(), "fresh")
	refused(t, []string{"not authenticated", other.Fingerprint}, "sync", s.url(), "--dest", fresh, "--trust", key.Public)
	if _, err := os.Lstat(fresh); !os.IsNotExist(err) {
		t.Errorf("a refused first sync left %s: %v", fresh, err)
	}

	// The Source that stops signing: every .asc removed.
	s.pack("--sign", key.Secret)
	for _, d := range documents(t, s.out) {
		os.Remove(d + sign.Suffix)
	}
	refused(t, []string{"not authenticated", "no signature", ".asc", "404"}, "sync", "--dest", dst)
	sameSnapshot(t, "pinned, signatures removed", before, snapshot(t, dst))

	// Changing keys takes an explicit --trust, and says so.
	f.pack("--sign", other.Secret)
	out := rsdumpOK(t, "sync", s.url(), "--dest", dst, "--trust", other.Public)
	if !strings.Contains(out, "pinned key changes from "+key.Fingerprint+" to "+other.Fingerprint) {
		t.Errorf("the key change is not said:\n%s", out)
	}
	if state, _ := os.ReadFile(filepath.Join(dst, ".rsdump", "state.json")); !strings.Contains(string(state), other.Fingerprint) || strings.Contains(string(state), key.Fingerprint) {
		t.Errorf("the new key is not the one pinned:\n%s", state)
	}
}

// TestTrustRefusesChangedDocument: one document changed after it was
// signed is refused, naming it and why; nothing lands.
func TestTrustRefusesChangedDocument(t *testing.T) {
	t.Parallel()
	key := signtest.NewKey(t, "source")
	s := newSignedSource(t, verifytest.ExampleFiles(t))
	s.pack("--sign", key.Secret)
	dump := filepath.Join(s.out, layout.DumpName)
	b, _ := os.ReadFile(dump)
	os.WriteFile(dump, []byte(strings.Replace(string(b), "<urlset", "<urlset ", 1)), 0o644)
	dst := filepath.Join(t.TempDir(), "copy")
	refused(t, []string{s.url() + layout.DumpName + ": not authenticated", "does not match"}, "sync", s.url(), "--dest", dst, "--trust", key.Public)
	if _, err := os.Lstat(dst); !os.IsNotExist(err) {
		t.Errorf("a refused first sync left %s: %v", dst, err)
	}
}

// TestSignValidExpires: signatures made with --sign-valid 2s are refused
// after 4 s, saying they expired and when. (That a signature is taken
// before it expires is sign.TestExpired's: on a loaded machine a sync may
// not be done within 2 s of the pack.)
func TestSignValidExpires(t *testing.T) {
	t.Parallel()
	key := signtest.NewKey(t, "source")
	s := newSignedSource(t, verifytest.ExampleFiles(t))
	s.pack("--sign", key.Secret, "--sign-valid", "2s")
	made := time.Now()
	time.Sleep(time.Until(made.Add(4 * time.Second)))
	refused(t, []string{"not authenticated", "expired at "}, "sync", s.url(), "--dest", t.TempDir(), "--trust", key.Public)
}

// TestTrustRefusesRollback: a signed dump older than what the pinned
// Destination holds is refused, as an unsigned one is; unpack into the
// pinned tree requires the pinned key too, without --trust.
func TestTrustRefusesRollback(t *testing.T) {
	t.Parallel()
	key, other := signtest.NewKey(t, "source"), signtest.NewKey(t, "other")
	s := newSignedSource(t, verifytest.ExampleFiles(t))
	s.pack("--sign", key.Secret, "--at", "2026-03-01T00:00:00Z")
	dst := t.TempDir()
	rsdumpOK(t, "sync", s.url(), "--dest", dst, "--trust", key.Public)
	s.pack("--sign", key.Secret, "--at", "2026-02-01T00:00:00Z")
	before := snapshot(t, dst)
	refused(t, []string{"older", "2026-02-01", "2026-03-01"}, "unpack", s.url()+layout.DumpName, "--base-url", s.srv.URL+"/res/", "--dest", dst)
	sameSnapshot(t, "rollback", before, snapshot(t, dst))
	s.pack("--sign", other.Secret, "--at", "2026-04-01T00:00:00Z")
	refused(t, []string{"not authenticated", key.Fingerprint}, "unpack", s.url()+layout.DumpName, "--base-url", s.srv.URL+"/res/", "--dest", dst)
	sameSnapshot(t, "unpack of another key's dump", before, snapshot(t, dst))
}

// TestResyncSourceSignedByGPG: a Source resync-build wrote (a Resource
// List, a Capability List), its documents signed with gpg --detach-sign
// --armor, is synced with --trust; one hash changed in its Resource List
// is refused, naming the list; rsdump sign over the same Source writes
// signatures gpg --verify accepts, and that sync takes again. A signature
// gpg makes with SHA-1 is refused, naming the hash.
func TestResyncSourceSignedByGPG(t *testing.T) {
	if testing.Short() {
		t.Skip("peer test skipped with -short")
	}
	rs := sharedtest.NewResync(t)
	g := signtest.NewGPG(t)
	key := g.GenKey("Resync Source <resync@example.org>", "rsa3072")
	pub := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(pub)))
	t.Cleanup(srv.Close)
	resDir := filepath.Join(pub, "res")
	// Names resync writes as they are (it percent-encodes none).
	files := map[string]string{"a.txt": "first", "dir/b.txt": "second", "dir/deep/c.bin": strings.Repeat("\x00\x01", 5000)}
	verifytest.WriteFiles(t, resDir, files)
	build := func(args ...string) {
		t.Helper()
		if out, err := rs.Run(t.Context(), t.TempDir(), "resync-build", args...); err != nil {
			t.Fatalf("resync-build %v: %v\n%s", args, err, out)
		}
	}
	list, caps := filepath.Join(pub, "resourcelist.xml"), filepath.Join(pub, "capabilitylist.xml")
	build("--write-resourcelist", "--hash", "sha-256", "--outfile", list, srv.URL+"/res/="+resDir)
	build("--write-capabilitylist", "resourcelist="+srv.URL+"/resourcelist.xml", "--outfile", caps)
	for _, d := range []string{list, caps} {
		g.DetachSign(key.Fingerprint, d)
	}
	dst := filepath.Join(t.TempDir(), "copy")
	rsdumpOK(t, "sync", srv.URL+"/capabilitylist.xml", "--dest", dst, "--trust", key.Public)
	verifytest.SameFiles(t, "resync Source", treeFiles(t, dst), treeFiles(t, resDir))

	// One hash changed in the signed Resource List.
	b, _ := os.ReadFile(list)
	hash := regexp.MustCompile(`sha-256:([0-9a-f])`).FindSubmatchIndex(b)
	if hash == nil {
		t.Fatalf("no sha-256 hash in the Resource List:\n%s", b)
	}
	changed := slices.Clone(b)
	if changed[hash[2]] == '0' {
		changed[hash[2]] = '1'
	} else {
		changed[hash[2]] = '0'
	}
	os.WriteFile(list, changed, 0o644)
	fresh := filepath.Join(t.TempDir(), "fresh")
	refused(t, []string{srv.URL + "/resourcelist.xml: not authenticated", "does not match"}, "sync", srv.URL+"/capabilitylist.xml", "--dest", fresh, "--trust", key.Public)

	// rsdump sign over the Source, as it now is: gpg takes its signatures.
	rsdumpOK(t, "sign", pub, "--key", key.Secret)
	for _, d := range []string{list, caps} {
		if out, err := g.Verify(d+sign.Suffix, d); err != nil || !strings.Contains(out, "Good signature") {
			t.Errorf("gpg --verify %s.asc: %v\n%s", d, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(resDir, "a.txt"+sign.Suffix)); err == nil {
		t.Error("rsdump sign signed a resource, which is no document")
	}

	// gpg's SHA-1 signature of the list is refused.
	os.WriteFile(list, b, 0o644)
	g.Run("--local-user", key.Fingerprint, "--digest-algo", "SHA1", "--detach-sign", "--armor", "--output", list+sign.Suffix, list)
	refused(t, []string{"resourcelist.xml: not authenticated", "SHA-1"}, "sync", srv.URL+"/capabilitylist.xml", "--dest", filepath.Join(t.TempDir(), "sha1"), "--trust", key.Public)
}

// signedList is a Source of a Resource List alone, signed by key, on a
// loopback server: publish writes files under /res/ and the list of them
// at `at`, an entry with a hash (sha-256 and length) for the names in
// hashed only, and signs it with rsdump sign.
type signedList struct {
	t        *testing.T
	key      signtest.Key
	pub, url string
}

func newSignedList(t *testing.T) *signedList {
	pub := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(pub)))
	t.Cleanup(srv.Close)
	return &signedList{t: t, key: signtest.NewKey(t, "source"), pub: pub, url: srv.URL}
}

func (l *signedList) publish(at time.Time, files map[string]string, hashed ...string) {
	l.t.Helper()
	verifytest.WriteFiles(l.t, filepath.Join(l.pub, "res"), files)
	var urls []resourcesync.URL
	for _, name := range slices.Sorted(maps.Keys(files)) {
		u := resourcesync.URL{Loc: l.url + "/res/" + name}
		if slices.Contains(hashed, name) {
			sum := sha256.Sum256([]byte(files[name]))
			n := int64(len(files[name]))
			u.MD = &resourcesync.MD{Hash: "sha-256:" + hex.EncodeToString(sum[:]), Length: &n}
		}
		urls = append(urls, u)
	}
	verifytest.WriteDoc(l.t, filepath.Join(l.pub, "resourcelist.xml"), resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: at}}, urls)
	rsdumpOK(l.t, "sign", l.pub, "--key", l.key.Secret)
}

// TestTrustRefusesListEntryWithoutHash: a signed Resource List whose
// entry carries no hash cannot vouch for what a server answers for it:
// the resource is refused, naming it, and never lands; the others do.
func TestTrustRefusesListEntryWithoutHash(t *testing.T) {
	t.Parallel()
	l := newSignedList(t)
	l.publish(verifytest.Time, map[string]string{"hashed.txt": "vouched for", "bare.txt": "vouched for by nothing"}, "hashed.txt")
	dst := t.TempDir()
	refused(t, []string{"bare.txt", "carries no hash", "cannot be authenticated"}, "sync", l.url+"/resourcelist.xml", "--dest", dst, "--base-url", l.url+"/res/", "--trust", l.key.Public)
	if _, err := os.Lstat(filepath.Join(dst, "bare.txt")); !os.IsNotExist(err) {
		t.Errorf("the resource without a hash landed: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "hashed.txt")); err != nil || string(b) != "vouched for" {
		t.Errorf("the hashed resource: %q, %v", b, err)
	}
}

// TestPinnedRunRefusedLeavesStateAsItWas: on a pinned Destination, a
// later run whose one change is refused (a new version of a resource its
// signed list carries without a hash) leaves the Destination byte for
// byte as it was, its state.json and written log too.
func TestPinnedRunRefusedLeavesStateAsItWas(t *testing.T) {
	t.Parallel()
	l := newSignedList(t)
	l.publish(verifytest.Time, map[string]string{"a.txt": "first", "b.txt": "second"}, "a.txt", "b.txt")
	dst := t.TempDir()
	rsdumpOK(t, "sync", l.url+"/resourcelist.xml", "--dest", dst, "--base-url", l.url+"/res/", "--trust", l.key.Public)
	before := snapshot(t, dst)
	l.publish(verifytest.Time.Add(time.Hour), map[string]string{"a.txt": "first", "b.txt": "second, changed"}, "a.txt")
	refused(t, []string{"b.txt", "carries no hash"}, "sync", "--dest", dst)
	sameSnapshot(t, "pinned, the one change refused", before, snapshot(t, dst))
}

// TestTrustedGetAndUnpack: get --trust of a signed dump saves its
// documents with their signatures beside the packages, and the copy is
// unpacked and verified with --trust as the original is; get --trust of a
// .meta4 alone takes a package only when its own <signature> verifies
// (one by another key is refused before it gets its name, one without a
// signature before anything is fetched).
func TestTrustedGetAndUnpack(t *testing.T) {
	t.Parallel()
	key, other := signtest.NewKey(t, "source"), signtest.NewKey(t, "other")
	s := newSignedSource(t, verifytest.ExampleFiles(t))
	s.pack("--sign", key.Secret)
	got := t.TempDir()
	rsdumpOK(t, "get", s.url()+layout.DumpName, "-o", got, "--trust", key.Public)
	for _, name := range []string{layout.DumpName, "resourcedump-00001.manifest.xml"} {
		if _, err := os.Stat(filepath.Join(got, name+sign.Suffix)); err != nil {
			t.Errorf("get saved no signature of %s: %v", name, err)
		}
	}
	rsdumpOK(t, "verify", got, "--trust", key.Public)
	dst := t.TempDir()
	rsdumpOK(t, "unpack", got, "--base-url", s.srv.URL+"/res/", "--dest", dst, "--trust", key.Public)
	sameTree(t, "unpack of get's copy", s.src, dst)
	refused(t, []string{"not authenticated", key.Fingerprint}, "verify", got, "--trust", other.Public)
	fresh := t.TempDir()
	refused(t, []string{"resourcedump-00001.zip", "cannot be authenticated"}, "unpack", filepath.Join(got, "resourcedump-00001.zip"), "--base-url", s.srv.URL+"/res/", "--dest", fresh, "--trust", key.Public)
	if left, _ := os.ReadDir(fresh); len(left) != 0 {
		t.Errorf("a refused unpack into an empty directory left %v", left)
	}

	refused(t, []string{"resourcedump-00001.zip", "cannot be authenticated"}, "get", s.url()+"resourcedump-00001.zip", "-o", t.TempDir(), "--trust", key.Public)

	// verify under a trust: a package alone is refused, as unpack
	// refuses it; one beside the signed documents that none lists is an
	// error, never "verified".
	refused(t, []string{"resourcedump-00001.zip", "cannot be authenticated"}, "verify", filepath.Join(got, "resourcedump-00001.zip"), "--trust", key.Public)
	refused(t, []string{"resourcedump-00001.zip", "cannot be authenticated"}, "verify", s.url()+"resourcedump-00001.zip", "--trust", key.Public)
	rsdumpOK(t, "verify", filepath.Join(got, "resourcedump-00001.zip")) // no trust: its bytes checked against its manifest
	stray := filepath.Join(got, "stray.zip")
	os.WriteFile(stray, must(os.ReadFile(filepath.Join(got, "resourcedump-00001.zip"))), 0o644)
	refused(t, []string{"stray.zip", "not listed", "cannot be authenticated"}, "verify", got, "--trust", key.Public)
	os.Remove(stray)

	meta := s.url() + "resourcedump-00001.zip.meta4"
	rsdumpOK(t, "get", meta, "-o", t.TempDir(), "--trust", key.Public)
	bad := t.TempDir()
	refused(t, []string{"resourcedump-00001.zip", "not authenticated", key.Fingerprint}, "get", meta, "-o", bad, "--trust", other.Public)
	if _, err := os.Stat(filepath.Join(bad, "resourcedump-00001.zip")); !os.IsNotExist(err) {
		t.Errorf("a package whose signature was refused got its name: %v", err)
	}
	p := filepath.Join(s.out, "resourcedump-00001.zip.meta4")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, meta4Signature.ReplaceAll(b, nil), 0o644)
	refused(t, []string{"no OpenPGP signature", "cannot be authenticated"}, "get", meta, "-o", t.TempDir(), "--trust", key.Public)
}

// TestSignPassphrase: a protected secret key signs with its passphrase
// from --sign-passphrase-file or RSDUMP_SIGN_PASSPHRASE, and without it
// pack refuses before writing anything, saying where to give it.
func TestSignPassphrase(t *testing.T) {
	key := signtest.NewKey(t, "source")
	el, err := openpgp.ReadArmoredKeyRing(strings.NewReader(string(must(os.ReadFile(key.Secret)))))
	if err != nil {
		t.Fatal(err)
	}
	if err := el[0].EncryptPrivateKeys([]byte("correct horse"), nil); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w, _ := armor.Encode(&b, openpgp.PrivateKeyType, nil)
	el[0].SerializePrivateWithoutSigning(w, nil)
	w.Close()
	dir := t.TempDir()
	protected, passFile := filepath.Join(dir, "protected.asc"), filepath.Join(dir, "passphrase")
	os.WriteFile(protected, b.Bytes(), 0o600)
	os.WriteFile(passFile, []byte("correct horse\n"), 0o600)
	s := newSignedSource(t, map[string]string{"a.txt": "a"})
	t.Setenv(passphraseEnv, "")
	refused(t, []string{"passphrase", "--sign-passphrase-file", passphraseEnv}, "pack", s.src, "--base-url", "http://127.0.0.1/res/", "-o", filepath.Join(dir, "none"), "--sign", protected)
	if _, err := os.Stat(filepath.Join(dir, "none")); !os.IsNotExist(err) {
		t.Errorf("a refused pack wrote its output: %v", err)
	}
	s.pack("--sign", protected, "--sign-passphrase-file", passFile)
	rsdumpOK(t, "sync", s.url(), "--dest", t.TempDir(), "--trust", key.Public)
	t.Setenv(passphraseEnv, "correct horse")
	s.pack("--sign", protected)
	rsdumpOK(t, "sync", s.url(), "--dest", t.TempDir(), "--trust", key.Public)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
