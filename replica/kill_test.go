package replica_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// TestMain lets the kill test re-run this test binary as the sync
// process it kills.
func TestMain(m *testing.M) {
	if os.Getenv("RSDUMP_SYNC_CHILD") != "" {
		childSync(os.Getenv("RSDUMP_SRC"), os.Getenv("RSDUMP_DST"))
		return
	}
	os.Exit(m.Run())
}

// childSync syncs and prints a line for each file written, unbuffered.
func childSync(src, dst string) {
	opts := replica.Options{Jobs: 1, Events: finding.OnFindings(func(f finding.Finding) {
		if f.Code == unpack.CheckWritten {
			fmt.Println("written", f.Path)
		}
	})}
	loc, _ := resourcesync.ParseLocation(src)
	if _, err := replica.Sync(context.Background(), loc, dst, opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// startChild starts a sync child process.
func startChild(t *testing.T, ctx context.Context, src, dst string) (*exec.Cmd, *bufio.Scanner) {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RSDUMP_SYNC_CHILD=1", "RSDUMP_SRC="+src, "RSDUMP_DST="+dst)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(out)
}

func kill(t *testing.T, cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGKILL)
	if err := cmd.Wait(); err == nil {
		t.Fatalf("child ended before it was killed")
	}
}

// TestKillMidDownloadResumes SIGKILLs sync while it downloads a package,
// then runs it again: the download continues from what was verified (the
// second run fetches well under the package's size) and the tree is
// exact. The first run committed nothing, so it recorded no Source: the
// second is given it again.
func TestKillMidDownloadResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test skipped with -short")
	}
	s := newSource(t, files(64, 100000))
	var sent atomic.Int64
	s.handler = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, ".zip") {
				w = &slowWriter{ResponseWriter: w, sent: &sent}
			}
			h.ServeHTTP(w, r)
		})
	}
	s.packDump(pack.Options{Compress: pack.Store, Metalink: &pack.MetalinkOptions{PieceLength: 128 << 10}})
	size := int64(64 * 100000)
	dst := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, _ := startChild(t, ctx, s.srv.URL+"/", dst)
	for sent.Load() < size/2 {
		if ctx.Err() != nil {
			t.Fatal("download did not progress")
		}
		time.Sleep(20 * time.Millisecond)
	}
	kill(t, cmd)
	first := sent.Load()
	if st, err := deststate.Read(dst); err != nil || st.Sync != nil || !st.Since().IsZero() {
		t.Errorf("a run killed before its first commit left a state: %+v (%v)", st, err)
	}
	res, fs, _ := syncRun(t, s.srv.URL+"/", dst, replica.Options{})
	if res.Problems() != 0 || res.Written != 64 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)
	if again := sent.Load() - first; again > size*3/4 {
		t.Errorf("the second run fetched %d of %d bytes: the download did not resume", again, size)
	}
	// The first run read its bitstreams while the package arrived (it
	// streams): what it had verified is not fetched again, only what it
	// had not received and what was in flight, at most a piece for each
	// of the engine's 16 connections.
	if again, inFlight := sent.Load()-first, int64(16*128<<10); again > size-first+inFlight {
		t.Errorf("the second run fetched %d bytes, more than the %d the first did not fetch plus %d in flight", again, size-first, inFlight)
	}
}

// slowWriter paces package bytes so that a kill lands mid-download.
type slowWriter struct {
	http.ResponseWriter
	sent *atomic.Int64
}

func (w *slowWriter) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		k := min(len(b), 32<<10)
		m, err := w.ResponseWriter.Write(b[:k])
		n += m
		w.sent.Add(int64(m))
		if err != nil {
			return n, err
		}
		b = b[k:]
		time.Sleep(5 * time.Millisecond)
	}
	return n, nil
}

// TestKillMidCommitResumes SIGKILLs sync once it has committed some files
// of a baseline: the next run does not fetch or write them again.
func TestKillMidCommitResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test skipped with -short")
	}
	s := newSource(t, files(3000, 2000))
	s.packDump(pack.Options{Compress: pack.Store, MaxPackageSize: 1 << 20})
	dst := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, sc := startChild(t, ctx, s.srv.URL+"/", dst)
	for n := 0; n < 1200; {
		if !sc.Scan() {
			cmd.Wait()
			t.Fatalf("child ended after %d files", n)
		}
		if strings.HasPrefix(sc.Text(), "written") {
			n++
		}
	}
	kill(t, cmd)
	res, fs, _ := syncRun(t, "", dst, replica.Options{})
	if res.Problems() != 0 || res.Present < 1000 || res.Written+res.Present != 3000 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)
}

// TestKillMidBaselineFetchesNoAppliedPackage SIGKILLs sync in the middle
// of a baseline's commits, then runs it again: no byte of a package the
// first run applied whole is fetched again (each is planned from its
// detached manifest and the written log, or, for a file whose record the
// kill lost, from the file itself), and the tree is exact.
func TestKillMidBaselineFetchesNoAppliedPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test skipped with -short")
	}
	s := newSource(t, files(3000, 2000))
	var mu sync.Mutex
	served := map[string]int64{}
	s.handler = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, ".zip") {
				w = &pathCounter{ResponseWriter: w, add: func(n int) { mu.Lock(); served[r.URL.Path] += int64(n); mu.Unlock() }}
			}
			h.ServeHTTP(w, r)
		})
	}
	s.packDump(pack.Options{Compress: pack.Store, MaxPackageSize: 1 << 20})
	dst := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, sc := startChild(t, ctx, s.srv.URL+"/", dst)
	written := map[string]bool{}
	for len(written) < 1300 {
		if !sc.Scan() {
			cmd.Wait()
			t.Fatalf("child ended after %d files", len(written))
		}
		if p, ok := strings.CutPrefix(sc.Text(), "written "); ok {
			written[p] = true
		}
	}
	kill(t, cmd)
	mu.Lock()
	clear(served)
	mu.Unlock()
	res, fs, _ := syncRun(t, "", dst, replica.Options{})
	if res.Problems() != 0 || res.Written+res.Present != 3000 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)
	_, pkgs := verifytest.ReadDoc(t, filepath.Join(s.out, layout.DumpName))
	whole := 0
	for _, pkg := range pkgs {
		l, _ := pkg.Link("contents")
		_, entries := verifytest.ReadDoc(t, filepath.Join(s.out, path.Base(l.Href)))
		applied := true
		for _, e := range entries {
			applied = applied && written[strings.TrimPrefix(e.Loc, s.base)]
		}
		if !applied {
			continue
		}
		whole++
		mu.Lock()
		n := served[strings.TrimPrefix(pkg.Loc, s.srv.URL)]
		mu.Unlock()
		if n != 0 {
			t.Errorf("%s, applied whole before the kill, was served %d bytes again", pkg.Loc, n)
		}
	}
	if whole < 2 {
		t.Errorf("%d packages applied whole before the kill, want at least 2", whole)
	}
}

// pathCounter counts a response's body bytes.
type pathCounter struct {
	http.ResponseWriter
	add func(int)
}

func (w *pathCounter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.add(n)
	return n, err
}
