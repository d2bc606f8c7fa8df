package unpack

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pkgread"
)

// fetchWith downloads a package served as body, described by want, and
// returns whether it was accepted, the findings and the requests made.
// The server sends the Digest header digestHdr, if not "".
func fetchWith(t *testing.T, body []byte, want, digestHdr string) (bool, []finding.Finding, int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if digestHdr != "" {
			w.Header().Set("Digest", digestHdr)
		}
		http.ServeContent(w, r, "p.zip", time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(srv.Close)
	d, err := openDest(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	u := newUnpacker(Options{Client: srv.Client()}, d)
	set, err := digest.Parse(want)
	if err != nil {
		t.Fatal(err)
	}
	var fs []finding.Finding
	rep := finding.NewReporter(finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) }))
	src, ok, err := u.open(context.Background(), pkgread.PackageRef{Loc: srv.URL + "/p.zip", Length: int64(len(body)), Want: set}, rep)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		src.close()
	}
	return ok, fs, n.Load()
}

// The engine checks the strongest hash the dump gives, not the first one:
// a package whose md5 matches but whose sha-512 does not is never accepted.
func TestDownloadChecksStrongestHash(t *testing.T) {
	t.Parallel()
	z, _ := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "a1"}})
	bad := verifytest.Flip(z, 40)
	m := md5.Sum(bad) // as if md5 had collided
	s := sha512.Sum512(z)
	ok, fs, _ := fetchWith(t, bad, "md5:"+hex.EncodeToString(m[:])+" sha-512:"+hex.EncodeToString(s[:]), "")
	if ok || len(fs) == 0 || !strings.Contains(fs[0].Msg, "sha-512") {
		t.Fatalf("accepted %v, findings %v; want a sha-512 mismatch", ok, fs)
	}
}

// A package whose only hash rsdump cannot compute is refused before any
// request, naming the hash type.
func TestDownloadRefusesUnverifiable(t *testing.T) {
	t.Parallel()
	z, _ := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "a1"}})
	ok, fs, n := fetchWith(t, z, "sha3-256:"+strings.Repeat("0", 64), "")
	if ok || len(fs) == 0 || !strings.Contains(fs[0].Msg, "sha3-256") {
		t.Fatalf("accepted %v, findings %v; want a refusal naming sha3-256", ok, fs)
	}
	if n != 0 {
		t.Errorf("%d requests for a package that cannot be verified", n)
	}
}

// A server's Digest header describes its own bytes; the dump's hash is
// the one checked. Bad bytes with a Digest header to match are refused.
func TestDownloadDumpHashOutranksDigestHeader(t *testing.T) {
	t.Parallel()
	z, _ := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "a1"}})
	bad := verifytest.Flip(z, 40)
	bs := sha256.Sum256(bad)
	ok, fs, _ := fetchWith(t, bad, "sha-256:"+verifytest.SHA256(z), "SHA-256="+base64.StdEncoding.EncodeToString(bs[:]))
	if ok || len(fs) == 0 {
		t.Fatalf("accepted %v, findings %v; want a hash mismatch", ok, fs)
	}
}
