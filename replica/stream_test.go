package replica_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/metalink"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/internal/httpc/httpctest"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
)

// TestSyncStagesWhileDownloading: sync stages a package's bitstreams from
// its verified pieces as they arrive. The server holds back the pieces of
// the package's second half (not its end, where the central directory
// is) until a bitstream of the first half is staged in DIR/.rsdump/tmp:
// on the code that downloads the whole package before reading it,
// nothing is staged and the pieces are released only by the time-out.
func TestSyncStagesWhileDownloading(t *testing.T) {
	t.Parallel()
	const n, size, plen = 64, 100000, 128 << 10
	s := newSource(t, files(n, size))
	dst := t.TempDir()
	total := int64(n * size)
	var early, late, parts atomic.Int64
	s.handler = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var first int64
			if strings.HasSuffix(r.URL.Path, ".zip") && r.Header.Get("Range") != "" {
				fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-", &first)
			}
			if first > total/2 && first < total-4*plen {
				if partWritten(dst) {
					parts.Add(1)
				}
				if staged(dst, 10*time.Second) {
					early.Add(1)
				} else {
					late.Add(1)
				}
			}
			h.ServeHTTP(w, r)
		})
	}
	s.packDump(pack.Options{Compress: pack.Store, Metalink: &pack.MetalinkOptions{PieceLength: plen}})
	res, fs, _ := syncRun(t, s.srv.URL+"/", dst, replica.Options{})
	if res.Problems() != 0 || res.Written != n {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)
	if early.Load() == 0 || late.Load() > 0 {
		t.Errorf("pieces of the second half released once a bitstream was staged: %d; by the time-out, nothing staged: %d", early.Load(), late.Load())
	}
	// The package is held in memory: it is never written to the cache
	// (and read back).
	if parts.Load() > 0 {
		t.Errorf("a .part of the package was in the cache during %d requests", parts.Load())
	}
}

// partWritten says whether a download's .part is in dst's cache.
func partWritten(dst string) bool {
	found := false
	filepath.WalkDir(filepath.Join(dst, filepath.FromSlash(deststate.Path(deststate.CacheDir))), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".part") {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// staged waits up to limit for a file in a staging directory of dst's:
// DIR/.rsdump/tmp/RANDOM, or a resumable package's
// DIR/.rsdump/cache/pkg-ID/stage.
func staged(dst string, limit time.Duration) bool {
	state := filepath.Join(dst, filepath.FromSlash(deststate.Path(".")))
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		found := false
		filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
			rel, _ := filepath.Rel(state, p)
			parts := strings.Split(filepath.ToSlash(rel), "/")
			inStage := len(parts) > 2 && parts[0] == deststate.TmpDir ||
				len(parts) > 3 && parts[0] == deststate.CacheDir && parts[2] == "stage"
			if err == nil && d.Type().IsRegular() && inStage {
				found = true
				return filepath.SkipAll
			}
			return nil
		})
		if found {
			return true
		}
	}
	return false
}

// TestSyncResumeChecksStaged: a sync whose package download fails half
// way keeps what it staged; the next run fetches only the rest, and a
// staged file changed in between is not taken (hashed again, it no longer
// matches the manifest): it is staged again from the package.
func TestSyncResumeChecksStaged(t *testing.T) {
	t.Parallel()
	const n, size, plen = 64, 100000, 128 << 10
	s := newSource(t, randomFiles(n, size))
	total := int64(n * size)
	dst := t.TempDir()
	var broken atomic.Bool
	var sent atomic.Int64
	broken.Store(true)
	s.handler = func(h http.Handler) http.Handler {
		counted := httpctest.Counting(h, ".zip", &sent)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var first int64
			fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-", &first)
			if strings.HasSuffix(r.URL.Path, ".zip") && broken.Load() && first > total*3/4 && first < total-4*plen {
				// Cut off once half the bitstreams are staged (written
				// whole: the staging files are made ahead of them).
				for end := time.Now().Add(10 * time.Second); len(stagedWhole(dst, size)) < n/2 && time.Now().Before(end); {
					time.Sleep(5 * time.Millisecond)
				}
				http.NotFound(w, r)
				return
			}
			counted.ServeHTTP(w, r)
		})
	}
	s.packDump(pack.Options{Compress: pack.Store, Metalink: &pack.MetalinkOptions{PieceLength: plen}})
	if res, _, _ := syncRun(t, s.srv.URL+"/", dst, replica.Options{}); res.Problems() == 0 {
		t.Fatal("the first run, its package cut off half way, reported no problem")
	}
	kept := stagedFiles(dst)
	if len(kept) < n/2 {
		t.Fatalf("%d bitstreams kept staged after the first run", len(kept))
	}
	b, err := os.ReadFile(kept[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(kept[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	// What a run left of a package the Source no longer has.
	cache := filepath.Join(dst, filepath.FromSlash(deststate.Path(deststate.CacheDir)))
	stale := filepath.Join(cache, "pkg-0000000000000000", "stage", "old.bin")
	os.MkdirAll(filepath.Dir(stale), 0o755)
	write(t, stale, []byte("a package of an earlier run"))
	first := sent.Load()
	broken.Store(false)
	res, fs, _ := syncRun(t, s.srv.URL+"/", dst, replica.Options{})
	if res.Problems() != 0 || res.Written != n {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)
	if left, _ := os.ReadDir(cache); len(left) != 0 {
		t.Errorf("a run that applied everything left %d entries in %s", len(left), cache)
	}
	if again := sent.Load() - first; again > total*3/4 {
		t.Errorf("the second run fetched %d of the package's %d bytes: it did not resume from what was staged", again, total)
	}
}

// stagedFiles lists the files in the kept stages of dst's packages
// (DIR/.rsdump/cache/pkg-ID/stage).
func stagedFiles(dst string) []string {
	stage, _ := filepath.Glob(filepath.Join(dst, filepath.FromSlash(deststate.Path(deststate.CacheDir)), "*", "stage"))
	var out []string
	for _, dir := range stage {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}

// stagedWhole is stagedFiles of size bytes: written whole.
func stagedWhole(dst string, size int64) []string {
	var out []string
	for _, p := range stagedFiles(dst) {
		if fi, err := os.Stat(p); err == nil && fi.Size() == size {
			out = append(out, p)
		}
	}
	return out
}

// TestSyncLargeBitstreamHeldBounded: a bitstream larger than the held
// download's window is let go of as it is read, not only once it is
// staged whole: the live heap stays within a few MiB of where it was (on
// the code that released at entry boundaries only, it grew by 15-49 MiB:
// the bitstream's pieces, held until its end).
func TestSyncLargeBitstreamHeldBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("48 MiB package skipped with -short")
	}
	const size, plen = 48 << 20, 256 << 10
	s := newSource(t, randomFiles(1, size))
	s.packDump(pack.Options{Compress: pack.Store, Metalink: &pack.MetalinkOptions{PieceLength: plen}})
	dst := t.TempDir()
	stopSampling := sampleLiveHeap(5 * time.Millisecond)
	o := replica.Options{}
	o.Transfer.HeldWindow = 1 << 20
	res, fs, _ := syncRun(t, s.srv.URL+"/", dst, o)
	peak := stopSampling()
	if res.Problems() != 0 || res.Written != 1 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)
	t.Logf("live heap peak +%d MiB", peak>>20)
	if p := peak; p > 12<<20 {
		t.Errorf("the live heap grew by %d MiB while a 48 MiB bitstream streamed through a 1 MiB window", p>>20)
	}
}

// TestSyncHeldPackageWithDirectories: a package that also holds entries
// no bitstream is (directory entries, as zip -r writes) syncs without a
// problem while it is held: what the layout check needs of those entries
// is read before their bytes are let go. The package is rewritten with
// such entries between its bitstreams, and its dump document and
// Metalink made to match.
func TestSyncHeldPackageWithDirectories(t *testing.T) {
	t.Parallel()
	const n, size, plen = 32, 100000, 64 << 10
	s := newSource(t, randomFiles(n, size))
	s.packDump(pack.Options{Compress: pack.Store, Metalink: &pack.MetalinkOptions{PieceLength: plen}})
	pkgs, _ := filepath.Glob(filepath.Join(s.out, "*.zip"))
	if len(pkgs) != 1 {
		t.Fatalf("%d packages", len(pkgs))
	}
	old, err := os.ReadFile(pkgs[0])
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(old), int64(len(old)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i, f := range zr.File {
		if i%8 == 1 {
			if _, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("dir%02d/", i), Method: zip.Store}); err != nil {
				t.Fatal(err)
			}
		}
		if err := zw.Copy(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	repacked := buf.Bytes()
	write(t, pkgs[0], repacked)
	doc := filepath.Join(s.out, layout.DumpName)
	d, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	oldSum, newSum := sha256.Sum256(old), sha256.Sum256(repacked)
	d = bytes.ReplaceAll(d, []byte(hex.EncodeToString(oldSum[:])), []byte(hex.EncodeToString(newSum[:])))
	d = bytes.ReplaceAll(d, []byte(fmt.Sprintf(`length="%d"`, len(old))), []byte(fmt.Sprintf(`length="%d"`, len(repacked))))
	write(t, doc, d)
	ml, err := os.Open(pkgs[0] + ".meta4")
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := metalink.Decode(ml)
	ml.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := metalink.FileFromReader(m.Files[0].Name, bytes.NewReader(repacked), plen)
	if err != nil {
		t.Fatal(err)
	}
	f.URLs = m.Files[0].URLs
	m.Files[0] = *f
	var mb bytes.Buffer
	if err := metalink.Encode(&mb, m); err != nil {
		t.Fatal(err)
	}
	write(t, pkgs[0]+".meta4", mb.Bytes())

	dst := t.TempDir()
	o := replica.Options{}
	o.Transfer.HeldWindow = 256 << 10 // a few pieces: the entries' bytes go long before the layout check
	res, fs, _ := syncRun(t, s.srv.URL+"/", dst, o)
	if res.Problems() != 0 || res.Written != n {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)
}
