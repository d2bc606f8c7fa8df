package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mt "github.com/rsdump/rsdump/internal/mirrortest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/resourcesync"
)

// Hash names are matched whatever their case, as the spec's examples
// vary: "SHA-256:" in a manifest and in a dump's hash attribute, and
// type="SHA-256" in a Metalink, verify like "sha-256".
func TestUpperCaseHashNames(t *testing.T) {
	t.Parallel()
	t.Run("manifest and dump", func(t *testing.T) {
		data := "upper"
		u := verifytest.URLFor(verifytest.File{Rel: "a.txt", Data: data}, "/resources/")
		u.MD.Hash = "SHA-256:" + verifytest.SHA256([]byte(data))
		m := verifytest.Manifest(t, verifytest.ResourceMD(), []resourcesync.URL{u})
		z := verifytest.Zip(t, []verifytest.Entry{
			{Name: "resources/a.txt", Data: []byte(data), Method: zip.Deflate},
			{Name: "manifest.xml", Data: m, Method: zip.Deflate},
		})
		doc := verifytest.ResourceDump(t, t.TempDir(), z)
		b, _ := os.ReadFile(doc)
		os.WriteFile(doc, bytes.ReplaceAll(b, []byte(`hash="sha-256:`), []byte(`hash="SHA-256:`)), 0o644)
		code, stdout, stderr := rsdump(t, "verify", doc)
		if code != exitOK || strings.Contains(stdout+stderr, "cannot compute") || !strings.Contains(stdout, " 0 unverified, 0 errors, 0 warnings") {
			t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
	})
	t.Run("metalink", func(t *testing.T) {
		data := bytes.Repeat([]byte("metalink "), 1<<12)
		ph, _ := metalink.NewPieceHasher("sha-256", 16<<10)
		ph.Write(data)
		pieces := ph.Pieces()
		pieces.Type = "SHA-256"
		sum := sha256.Sum256(data)
		size := int64(len(data))
		s, _ := mt.Server(bytes.NewReader(data), size, "pkg.zip")
		t.Cleanup(s.Close)
		f := metalink.File{Name: "pkg.zip", Size: &size, Hashes: []metalink.Hash{{Type: "SHA-256", Value: hex.EncodeToString(sum[:])}},
			Pieces: []metalink.Pieces{pieces}, URLs: []metalink.URL{{URL: s.URL + "/pkg.zip", Priority: 1}}}
		var b bytes.Buffer
		if err := metalink.Encode(&b, &metalink.Metalink{Files: []metalink.File{f}}); err != nil {
			t.Fatal(err)
		}
		meta := filepath.Join(t.TempDir(), "pkg.meta4")
		os.WriteFile(meta, b.Bytes(), 0o644)
		out := t.TempDir()
		code, stdout, stderr := rsdump(t, "get", meta, "-o", out)
		got, _ := os.ReadFile(filepath.Join(out, "pkg.zip"))
		if code != exitOK || !bytes.Equal(got, data) || strings.Contains(strings.ToLower(stdout+stderr), "no hash") {
			t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
	})
}
