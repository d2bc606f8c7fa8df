package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rsdump/rsdump/internal/s3test"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pack"
)

// s3Objects reads every object under prefix in bucket, by name relative
// to the prefix.
func s3Objects(t *testing.T, srv *s3test.Server, bucket, prefix string) map[string][]byte {
	t.Helper()
	out, err := srv.Client.API.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string][]byte{}
	for _, o := range out.Contents {
		objs[strings.TrimPrefix(*o.Key, prefix)] = srv.Get(t, bucket, *o.Key)
	}
	return objs
}

// appended is objs with the segments of each appended name (as the
// state's delta), NAME.seg/00000001, ..., joined as NAME, as a directory
// holds it.
func appended(objs map[string][]byte) map[string][]byte {
	var segs []string
	for k := range objs {
		if strings.Contains(k, ".seg/") {
			segs = append(segs, k)
		}
	}
	sort.Strings(segs)
	for _, k := range segs {
		name, _, _ := strings.Cut(k, ".seg/")
		objs[name] = append(objs[name], objs[k]...)
		delete(objs, k)
	}
	return objs
}

// dirFiles reads every file under dir but rsdump's state, by
// slash-separated relative name.
func dirFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for rel, f := range verifytest.ReadTreeFiles(t, dir) {
		files[rel] = []byte(f.Data)
	}
	return files
}

func sameFiles(t *testing.T, what string, want, got map[string][]byte) {
	t.Helper()
	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if g, ok := got[n]; !ok || !bytes.Equal(g, want[n]) {
			t.Errorf("%s: %s missing or different (%d bytes, want %d)", what, n, len(got[n]), len(want[n]))
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s: %s is extra", what, n)
		}
	}
	if len(names) == 0 {
		t.Errorf("%s: nothing written", what)
	}
}

// A pack to s3:// and a pack to a directory with the same --at give the
// same bytes, every document and .meta4 included; verify and unpack read
// the bucket back.
func TestPackToS3SameAsDisk(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "pub")
	src := t.TempDir()
	for i := range 12 {
		os.WriteFile(filepath.Join(src, "f"+string(rune('a'+i))), randomFile(uint64(i), 300000+i*1000), 0o644)
	}
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "sub", "text.txt"), bytes.Repeat([]byte("text "), 50000), 0o644)
	args := []string{"pack", src, "--base-url", "http://127.0.0.1/rs/", "--at", "2024-01-01T00:00:00Z",
		"--max-package-size", "1500000", "--metalink", "--mirror", "http://127.0.0.1:9/m/", "-q"}
	disk := t.TempDir()
	if code, _, stderr := rsdump(t, append(args, "-o", disk)...); code != exitOK {
		t.Fatalf("pack to disk: exit %d\n%s", code, stderr)
	}
	ep := "--s3-endpoint=" + srv.Endpoint
	if code, _, stderr := rsdump(t, append(args, "-o", "s3://pub/dumps/one", ep)...); code != exitOK {
		t.Fatalf("pack to s3: exit %d\n%s", code, stderr)
	}
	sameFiles(t, "s3://pub/dumps/one/", dirFiles(t, disk), s3Objects(t, srv, "pub", "dumps/one/"))

	code, stdout, stderr := rsdump(t, "verify", "-q", ep, "s3://pub/dumps/one/resourcedump.xml")
	if code != exitOK || !strings.Contains(stdout, "13 verified, 0 unverified, 0 errors, 0 warnings") {
		t.Errorf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
	// verify takes the value -o took, as it takes the directory.
	for _, out := range []string{"s3://pub/dumps/one", "s3://pub/dumps/one/"} {
		code, stdout, stderr := rsdump(t, "verify", "-q", ep, out)
		if code != exitOK || !strings.Contains(stdout, "13 verified, 0 unverified, 0 errors, 0 warnings") {
			t.Errorf("verify %s: exit %d\n%s%s", out, code, stdout, stderr)
		}
	}
	dest := t.TempDir()
	if code, _, stderr := rsdump(t, "unpack", "-q", ep, "s3://pub/dumps/one/resourcedump.xml", "--dest", dest, "--base-url", "http://127.0.0.1/rs/"); code != exitOK {
		t.Fatalf("unpack: exit %d\n%s", code, stderr)
	}
	sameFiles(t, "unpacked", dirFiles(t, src), dirFiles(t, dest))
}

func randomFile(seed uint64, n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed), 7}).Read(b)
	return b
}

// partCounter is a proxy in front of the S3 server that counts the parts
// uploaded through it.
func partCounter(t *testing.T, endpoint string) (string, *atomic.Int32) {
	var n atomic.Int32
	target, _ := url.Parse(endpoint)
	rp := httputil.NewSingleHostReverseProxy(target)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Query().Get("partNumber") != "" {
			n.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL, &n
}

// A pack killed with SIGKILL while a package is being uploaded, then run
// again, gives the objects of an uninterrupted run: the rerun resumes the
// upload the journal names and does not send again the parts stored.
func TestPackToS3KilledResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping subprocess kill test in -short mode")
	}
	srv := s3test.Start(t)
	srv.Bucket(t, "pub")
	bin := buildRsdump(t)
	src := t.TempDir()
	for i := range 4 {
		os.WriteFile(filepath.Join(src, "big"+string(rune('a'+i))), randomFile(uint64(40+i), 9_000_000), 0o644)
	}
	proxy, parts := partCounter(t, srv.Endpoint)
	args := func(out string) []string {
		return []string{"pack", src, "--base-url", "http://127.0.0.1/rs/", "-o", out, "--at", "2024-01-01T00:00:00Z",
			"--max-package-size", "20MB", "--quiet", "--s3-endpoint", proxy, "-j", "1"}
	}
	if out, err := exec.Command(bin, args("s3://pub/whole")...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	whole := parts.Swap(0)

	cmd := exec.Command(bin, args("s3://pub/killed")...)
	// A killed pack leaves its scratch directory behind (a process killed
	// does not clean up): in the test's, not in the machine's /tmp.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for parts.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	before := parts.Swap(0)
	if before < 3 {
		t.Fatalf("only %d parts sent in 60 s", before)
	}
	if _, ok := s3Objects(t, srv, "pub", "killed/")["resourcedump.xml"]; ok {
		t.Skip("the run finished before it was killed; nothing to resume")
	}
	if out, err := exec.Command(bin, args("s3://pub/killed")...).CombinedOutput(); err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	again := parts.Load()
	t.Logf("parts: %d in one run; %d before the kill, %d after", whole, before, again)
	if again >= whole {
		t.Errorf("the resumed run sent %d parts, as many as a whole run (%d): nothing resumed", again, whole)
	}
	sameFiles(t, "s3://pub/killed/", s3Objects(t, srv, "pub", "whole/"), s3Objects(t, srv, "pub", "killed/"))
	ups, err := srv.Client.API.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: ptrTo("pub")})
	if err != nil || len(ups.Uploads) != 0 {
		t.Errorf("uploads left open: %v, %v", ups, err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// publishedToS3Server starts an S3 server with the bucket "pub".
func publishedToS3Server(t *testing.T) *s3test.Server {
	srv := s3test.Start(t)
	srv.Bucket(t, "pub")
	return srv
}

// A Change Dump to s3:// is the same as to a directory: a full pack, then
// --changes after an edit, both with the same --at, give the same bytes.
func TestPackChangesToS3SameAsDisk(t *testing.T) {
	srv := publishedToS3Server(t)
	src := t.TempDir()
	for i := range 6 {
		os.WriteFile(filepath.Join(src, "c"+string(rune('a'+i))), randomFile(uint64(200+i), 5000+i), 0o644)
	}
	old := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 6 {
		os.Chtimes(filepath.Join(src, "c"+string(rune('a'+i))), old, old)
	}
	disk := t.TempDir()
	ep := "--s3-endpoint=" + srv.Endpoint
	run := func(at string, extra ...string) {
		t.Helper()
		args := append([]string{"pack", src, "--base-url", "http://127.0.0.1/rs/", "--at", at, "-q"}, extra...)
		if code, _, stderr := rsdump(t, append(args, "-o", disk)...); code != exitOK {
			t.Fatalf("%v to disk: exit %d\n%s", extra, code, stderr)
		}
		if code, _, stderr := rsdump(t, append(args, "-o", "s3://pub/chg", ep)...); code != exitOK {
			t.Fatalf("%v to s3: exit %d\n%s", extra, code, stderr)
		}
	}
	run("2024-02-01T00:00:00Z")
	os.WriteFile(filepath.Join(src, "cb"), []byte("changed"), 0o644)
	newer := time.Date(2024, 2, 15, 0, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(src, "cb"), newer, newer)
	os.Remove(filepath.Join(src, "cc"))
	run("2024-03-01T00:00:00Z", "--changes")
	objs := appended(s3Objects(t, srv, "pub", "chg/"))
	if _, ok := objs["changedump.xml"]; !ok {
		t.Fatal("no changedump.xml in the bucket")
	}
	sameFiles(t, "s3://pub/chg/", dirFiles(t, disk), objs)
	// Later runs read the state's delta back from its segments: the
	// same file changed again, one deleted before created again.
	for i, at := range []string{"2024-04-01T00:00:00Z", "2024-05-01T00:00:00Z"} {
		os.WriteFile(filepath.Join(src, "cb"), []byte(fmt.Sprintf("changed %d", i+2)), 0o644)
		mt := time.Date(2024, time.Month(3+i), 15, 0, 0, 0, 0, time.UTC)
		os.Chtimes(filepath.Join(src, "cb"), mt, mt)
		if i == 0 {
			os.Remove(filepath.Join(src, "cd"))
		} else {
			os.WriteFile(filepath.Join(src, "cd"), []byte("back"), 0o644)
			os.Chtimes(filepath.Join(src, "cd"), mt, mt)
		}
		run(at, "--changes")
		sameFiles(t, "s3://pub/chg/ after run "+at, dirFiles(t, disk), appended(s3Objects(t, srv, "pub", "chg/")))
	}
	if _, err := os.Stat(filepath.Join(disk, pack.StateName+".delta")); err != nil {
		t.Errorf("no delta on disk after three --changes runs: %v", err)
	}
	objs = s3Objects(t, srv, "pub", "chg/")
	if _, ok := objs[pack.StateName+".delta.seg/00000001"]; !ok {
		t.Errorf("no segment of the delta in the bucket after three --changes runs")
	}
}

// A part the server refuses, its body no longer matching the SHA-256 it
// was sent with, fails pack with exit 1, naming the package and the part;
// no dump document appears.
func TestPackToS3RejectedPart(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "pub")
	px := srv.NewProxy(t)
	px.Corrupt.Store(2)
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "big.bin"), randomFile(9, 12<<20), 0o644) // two parts of 8 MiB
	code, _, stderr := rsdump(t, "pack", src, "--base-url", "http://127.0.0.1/rs/", "-q",
		"-o", "s3://pub/dumps/bad", "--s3-endpoint", px.URL)
	if code != exitFailed || !strings.Contains(stderr, "s3://pub/dumps/bad/resourcedump-00001.zip: part 2") {
		t.Fatalf("exit %d, want %d naming part 2 of the package:\n%s", code, exitFailed, stderr)
	}
	if px.BadSums.Load() != 0 {
		t.Errorf("%d parts sent without their right checksum", px.BadSums.Load())
	}
	for key := range s3Objects(t, srv, "pub", "dumps/bad/") {
		if key == "resourcedump.xml" || strings.HasSuffix(key, ".zip") {
			t.Errorf("%s stored after a refused part", key)
		}
	}
}
