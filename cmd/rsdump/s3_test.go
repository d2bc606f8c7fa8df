package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/s3test"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/metalink"
)

// publishedToS3 packs the example tree on disk and copies the output into
// s3://dumps/rs/, as an archive that publishes from a bucket would.
func publishedToS3(t *testing.T) *s3test.Server {
	t.Helper()
	out := packedExample(t)
	srv := s3test.Start(t)
	srv.Bucket(t, "dumps")
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			b, _ := os.ReadFile(filepath.Join(out, e.Name()))
			srv.Put(t, "dumps", "rs/"+e.Name(), b)
		}
	}
	return srv
}

// treeEquals compares a tree with the files map, both ways.
func treeEquals(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	verifytest.SameFiles(t, dir, verifytest.ReadTree(t, dir), want)
}

// verify, unpack and get read a dump from s3:// with --s3-endpoint: the
// packages beside the dump document in the bucket, signed requests
// through rsdump's HTTP client.
func TestReadFromS3(t *testing.T) {
	srv := publishedToS3(t)
	doc := "s3://dumps/rs/resourcedump.xml"
	ep := "--s3-endpoint=" + srv.Endpoint

	code, stdout, stderr := rsdump(t, "verify", "-q", ep, doc)
	if code != exitOK || !strings.Contains(stdout, "9 bitstreams (78.0 KiB): 9 verified, 0 unverified, 0 errors, 0 warnings") {
		t.Errorf("verify %s: exit %d\n%s%s", doc, code, stdout, stderr)
	}
	code, stdout, stderr = rsdump(t, "verify", "-q", ep, "s3://dumps/rs/resourcedump-00001.zip")
	if code != exitOK || !strings.Contains(stdout, "9 verified") {
		t.Errorf("verify of a package object: exit %d\n%s%s", code, stdout, stderr)
	}

	dest := t.TempDir()
	if code, _, stderr := rsdump(t, "unpack", "-q", ep, doc, "--dest", dest, "--base-url", verifytest.BaseURL); code != exitOK {
		t.Fatalf("unpack %s: exit %d\n%s", doc, code, stderr)
	}
	treeEquals(t, dest, verifytest.ExampleFiles(t))

	synced := t.TempDir()
	if code, _, stderr := rsdump(t, "sync", "-q", ep, doc, "--dest", synced, "--base-url", verifytest.BaseURL); code != exitOK {
		t.Fatalf("sync %s: exit %d\n%s", doc, code, stderr)
	}
	treeEquals(t, synced, verifytest.ExampleFiles(t))

	got := t.TempDir()
	if code, _, stderr := rsdump(t, "get", "-q", ep, doc, "-o", got); code != exitOK {
		t.Fatalf("get %s: exit %d\n%s", doc, code, stderr)
	}
	want := srv.Get(t, "dumps", "rs/resourcedump-00001.zip")
	if b, err := os.ReadFile(filepath.Join(got, "resourcedump-00001.zip")); err != nil || string(b) != string(want) {
		t.Fatalf("get: the package differs from the object (%v)", err)
	}
}

// A missing object or bucket fails naming the s3:// URL and what the
// server said.
func TestReadFromS3Missing(t *testing.T) {
	srv := publishedToS3(t)
	ep := "--s3-endpoint=" + srv.Endpoint
	code, _, stderr := rsdump(t, "verify", "-q", ep, "s3://dumps/rs/nothing.xml")
	if code == exitOK || !strings.Contains(stderr, "s3://dumps/rs/nothing.xml") || !strings.Contains(stderr, "NoSuchKey") {
		t.Errorf("missing object: exit %d\n%s", code, stderr)
	}
	code, _, stderr = rsdump(t, "verify", "-q", "--s3-endpoint=ftp://x", "s3://dumps/rs/resourcedump.xml")
	if code != exitUsage || !strings.Contains(stderr, "--s3-endpoint") {
		t.Errorf("bad endpoint: exit %d\n%s", code, stderr)
	}
	code, _, stderr = rsdump(t, "verify", "-q", ep, "s3://A/x.xml")
	if code != exitUsage || !strings.Contains(stderr, "bucket") {
		t.Errorf("bad bucket: exit %d\n%s", code, stderr)
	}
}

// An HTTP mirror that fronts a bucket works as any other: a .meta4 whose
// URL is a presigned GET of the package object is fetched piece by piece
// (Range requests on the presigned URL) with no S3 setting at all.
func TestGetPresignedMirror(t *testing.T) {
	srv := publishedToS3(t)
	data := srv.Get(t, "dumps", "rs/resourcedump-00001.zip")
	signed, err := srv.Client.Presign(context.Background(), http.MethodGet, "dumps", "rs/resourcedump-00001.zip")
	if err != nil {
		t.Fatal(err)
	}
	ph, _ := metalink.NewPieceHasher("sha-256", 16<<10)
	ph.Write(data)
	sum := sha256.Sum256(data)
	size := int64(len(data))
	var b bytes.Buffer
	metalink.Encode(&b, &metalink.Metalink{Files: []metalink.File{{Name: "resourcedump-00001.zip", Size: &size,
		Hashes: []metalink.Hash{{Type: "sha-256", Value: hex.EncodeToString(sum[:])}}, Pieces: []metalink.Pieces{ph.Pieces()},
		URLs: []metalink.URL{{URL: signed.URL}}}}})
	meta := filepath.Join(t.TempDir(), "p.meta4")
	os.WriteFile(meta, b.Bytes(), 0o644)
	out := t.TempDir()
	if code, _, stderr := rsdump(t, "get", "-q", meta, "-o", out); code != exitOK {
		t.Fatalf("get of a presigned mirror: exit %d\n%s", code, stderr)
	}
	if got, err := os.ReadFile(filepath.Join(out, "resourcedump-00001.zip")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the package differs from the object (%v)", err)
	}
}
