package unpack_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// TestMain lets the kill tests re-run this test binary as the unpack
// process they kill.
func TestMain(m *testing.M) {
	if os.Getenv("RSDUMP_KILL_CHILD") != "" {
		if at := os.Getenv("RSDUMP_KILL_AT"); at != "" {
			killAtHook(at)
		}
		if m, err := strconv.ParseUint(os.Getenv("RSDUMP_UMASK"), 8, 32); err == nil {
			syscall.Umask(int(m))
		}
		childUnpack(os.Getenv("RSDUMP_SRC"), os.Getenv("RSDUMP_DST"))
		return
	}
	os.Exit(m.Run())
}

// childUnpack unpacks and prints a line for each bitstream staged and each
// file written, unbuffered: the parent reads them to know where the run is.
// Once the parent stops reading, the pipe fills and the child blocks in
// the middle of its work.
func childUnpack(src, dst string) {
	m, _ := deststate.NewMapper(deststate.ByURI, verifytest.BaseURL)
	opts := unpack.Options{Mapper: m, Jobs: 1,
		Events: func(e finding.Event) {
			switch e := e.(type) {
			case finding.Progress:
				fmt.Println("staged")
			case finding.Finding:
				if e.Code == unpack.CheckWritten || e.Code == unpack.CheckDeleted {
					fmt.Println(e.Code, e.Path)
				}
			}
		}}
	if _, err := unpack.Unpack(context.Background(), src, dst, opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// killAfter runs the child on src into dst and SIGKILLs it once it has
// printed n lines starting with one of prefixes. It fails if the child
// ends first.
func killAfter(t *testing.T, src, dst string, n int, prefixes ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RSDUMP_KILL_CHILD=1", "RSDUMP_SRC="+src, "RSDUMP_DST="+dst)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for seen := 0; seen < n; {
		if !sc.Scan() {
			cmd.Wait()
			t.Fatalf("child ended after %d %q lines, before it could be killed", seen, prefixes)
		}
		for _, p := range prefixes {
			if strings.HasPrefix(sc.Text(), p) {
				seen++
			}
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	if err := cmd.Wait(); err == nil {
		t.Fatalf("child was not killed")
	}
}

func manyFiles(n int, size int) map[string]string {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("d%d/f%04d.bin", i%7, i)] = strings.Repeat(fmt.Sprintf("%05d", i), size/5)
	}
	return files
}

// TestKillAndResume kills unpack in the middle of a package, once while
// staging and once while committing, and checks that running it again
// ends in the tree an uninterrupted run makes.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test skipped with -short")
	}
	out := packDir(t, tree(t, manyFiles(2000, 4000)), pack.Options{Compress: pack.Store})
	doc := filepath.Join(out, layout.DumpName)
	whole := t.TempDir()
	if res, fs := run(t, doc, whole, unpack.Options{}); res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	for _, kill := range []struct {
		prefix string
		n      int
	}{{"staged", 700}, {"written", 300}} {
		t.Run(kill.prefix, func(t *testing.T) {
			dst := t.TempDir()
			killAfter(t, doc, dst, kill.n, kill.prefix)
			res, fs := run(t, doc, dst, unpack.Options{})
			if res.Problems() != 0 {
				t.Fatalf("resumed run: %+v\n%s", res, dump(fs))
			}
			equalMaps(t, "resumed tree", readTree(t, dst), readTree(t, whole))
			if kill.prefix == "written" && res.Present == 0 {
				t.Errorf("nothing was committed before the kill: the test did not kill mid-package")
			}
			if s := readState(t, dst); s.Pending || s.ResourceDumpAt.IsZero() {
				t.Errorf("state after the resumed run: %+v", s)
			}
		})
	}
}

// TestKillChangeDump kills the application of a Change Dump while it
// commits its second package.
func TestKillChangeDump(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test skipped with -short")
	}
	var p1, p2 verifytest.ChangePackage
	p1 = verifytest.ChangePackage{From: at(1, 0), Until: at(2, 0)}
	p2 = verifytest.ChangePackage{From: at(2, 0), Until: at(3, 0)}
	for i := range 600 {
		rel := fmt.Sprintf("c/%04d.txt", i)
		p1.Changes = append(p1.Changes, change(resourcesync.ChangeCreated, rel, "v1 "+rel, at(1, 1)))
		kind, data := resourcesync.ChangeUpdated, "v2 "+rel
		if i%3 == 0 {
			kind, data = resourcesync.ChangeDeleted, ""
		}
		p2.Changes = append(p2.Changes, change(kind, rel, data, at(2, 1)))
	}
	doc := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{p1, p2})
	whole, dst := t.TempDir(), t.TempDir()
	for _, d := range []string{whole, dst} {
		writeState(t, d, deststate.State{ResourceDumpAt: at(1, 0)}) // an empty baseline
	}
	if res, fs := run(t, doc, whole, unpack.Options{}); res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	killAfter(t, doc, dst, 600+300, "written", "deleted") // all of the first package, half of the second
	if s := readState(t, dst); !s.ChangeDumpUntil.Equal(at(2, 0)) {
		t.Errorf("state after the kill: %+v, want until %s", s, at(2, 0))
	}
	res, fs := run(t, doc, dst, unpack.Options{})
	if res.Problems() != 0 || res.Packages != 1 {
		t.Fatalf("resumed run: %+v\n%s", res, dump(fs))
	}
	equalMaps(t, "resumed tree", readTree(t, dst), readTree(t, whole))
	if s := readState(t, dst); s.Pending || !s.ChangeDumpUntil.Equal(at(3, 0)) {
		t.Errorf("state after the resumed run: %+v, want until %s", s, at(3, 0))
	}
}

// killAtHook makes the child SIGKILL itself at a commit point, given as
// "POINT N K": the Kth time (from 1) it reaches POINT with the hook's
// count N (a number of renames at HookCommit, else 0).
func killAtHook(at string) {
	var point string
	var n, k int
	if _, err := fmt.Sscan(at, &point, &n, &k); err != nil {
		fmt.Fprintln(os.Stderr, "RSDUMP_KILL_AT:", err)
		os.Exit(2)
	}
	seen := 0
	unpack.SetHook(func(p string, got int) {
		if p == point && got == n {
			if seen++; seen == k {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
		}
	})
}

// runKilledAt runs the child on src into dst until it kills itself at
// the commit point at (see killAtHook); it fails if the child ends
// otherwise.
func runKilledAt(t *testing.T, src, dst, at string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RSDUMP_KILL_CHILD=1", "RSDUMP_KILL_AT="+at, "RSDUMP_SRC="+src, "RSDUMP_DST="+dst)
	out, err := cmd.CombinedOutput()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if err == nil || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child at %q: %v, want killed by SIGKILL; output:\n%.2000s", at, err, out)
	}
}

// TestKillAtCommitPoints kills unpack at each point of the batched commit
// of a package (staged, durable, mid-rename, renamed, synced) and between
// packages. After each kill, every file under a final name must be the
// whole bitstream of a clean run (nothing partial, nothing unverified);
// running again must end in the tree of the clean run, with the staging
// area emptied and the state complete.
func TestKillAtCommitPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test skipped with -short")
	}
	// Three packages of about 400 files each, some files larger than a
	// write buffer.
	files := manyFiles(1200, 400)
	for i := range 5 {
		files[fmt.Sprintf("big/%d.bin", i)] = strings.Repeat(fmt.Sprintf("%07d", i), 300<<10/7)
	}
	out := packDir(t, tree(t, files), pack.Options{Compress: pack.Store, MaxEntries: 410})
	doc := filepath.Join(out, layout.DumpName)
	whole := t.TempDir()
	if res, fs := run(t, doc, whole, unpack.Options{}); res.Problems() != 0 || res.Packages != 3 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	want := readTree(t, whole)
	// Into a fresh tree, the first package's directories are moved in
	// whole, a few renames; into a tree whose directories exist (made
	// empty first), each file is renamed.
	for _, at := range []string{
		unpack.HookStaged + " 0 1",
		unpack.HookDurable + " 0 1",
		unpack.HookCommit + " 2 1",
		unpack.HookCommitted + " 0 1",
		unpack.HookSynced + " 0 1",
		unpack.HookDurable + " 0 2", // the second package, the first one done
		"dirs " + unpack.HookCommit + " 150 1",
	} {
		dirsFirst := strings.HasPrefix(at, "dirs ")
		at = strings.TrimPrefix(at, "dirs ")
		name := strings.Fields(at)[0] + strings.Fields(at)[2]
		if dirsFirst {
			name += "IntoDirs"
		}
		t.Run(name, func(t *testing.T) {
			dst := t.TempDir()
			if dirsFirst {
				for d := range 7 {
					os.Mkdir(filepath.Join(dst, fmt.Sprintf("d%d", d)), 0o755)
				}
			}
			runKilledAt(t, doc, dst, at)
			got := readTree(t, dst)
			for name, data := range got {
				if data != want[name] {
					t.Errorf("after the kill, %s holds %d bytes that are not its bitstream", name, len(data))
				}
			}
			if (strings.HasPrefix(at, unpack.HookSynced) || strings.HasSuffix(at, " 2")) && len(got) < 400 {
				t.Errorf("killed after a package was synced, yet only %d files are in place", len(got))
			}
			res, fs := run(t, doc, dst, unpack.Options{})
			if res.Problems() != 0 {
				t.Fatalf("resumed run: %+v\n%s", res, dump(fs))
			}
			equalMaps(t, "resumed tree", readTree(t, dst), want)
			if s := readState(t, dst); s.Pending || s.ResourceDumpAt.IsZero() {
				t.Errorf("state after the resumed run: %+v", s)
			}
			if left, _ := os.ReadDir(filepath.Join(dst, deststate.DirName, "tmp")); len(left) != 0 {
				t.Errorf("staging area not emptied: %d entries left", len(left))
			}
		})
	}
}

// TestTouchMarkedPendingFirst: a run whose one change is a file's mtime
// (a file rsdump wrote, in place, its mtime changed at the Destination)
// records itself as pending before it sets it: killed after the commit,
// it leaves the mtime set and the state pending; the next run ends it.
func TestTouchMarkedPendingFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test skipped with -short")
	}
	t.Parallel()
	out := packDir(t, tree(t, map[string]string{"a.txt": "first", "d/b.txt": "second"}), pack.Options{})
	doc := filepath.Join(out, layout.DumpName)
	dst := t.TempDir()
	if res, fs := run(t, doc, dst, unpack.Options{}); res.Problems() != 0 || res.Written != 2 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	name := filepath.Join(dst, "d", "b.txt")
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	want := fi.ModTime()
	stale := want.Add(-48 * time.Hour)
	if err := os.Chtimes(name, stale, stale); err != nil {
		t.Fatal(err)
	}
	// Killed before the commit: the tree changed only if the state says
	// a run was under way.
	runKilledAt(t, doc, dst, unpack.HookDurable+" 0 1")
	if fi, _ := os.Stat(name); !fi.ModTime().Equal(stale) && !readState(t, dst).Pending {
		t.Errorf("killed before the commit, the mtime was set (%v) and the state does not say a run was under way", fi.ModTime())
	}
	runKilledAt(t, doc, dst, unpack.HookCommitted+" 0 1")
	if fi, _ := os.Stat(name); !fi.ModTime().Equal(want) {
		t.Errorf("mtime after the commit: %v, want %v", fi.ModTime(), want)
	}
	if s := readState(t, dst); !s.Pending {
		t.Errorf("killed after a touch, the state does not say a run was under way: %+v", s)
	}
	if res, fs := run(t, doc, dst, unpack.Options{}); res.Problems() != 0 {
		t.Fatalf("the next run: %+v\n%s", res, dump(fs))
	}
	if s := readState(t, dst); s.Pending {
		t.Errorf("the next run left the state pending: %+v", s)
	}
}

// TestPendingClearedAfterKilledRun: a run over a tree whose state says
// the last run was killed (pending) clears it once it has committed,
// though marking itself pending wrote nothing new.
func TestPendingClearedAfterKilledRun(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, map[string]string{"a.txt": "first", "d/b.txt": "second"}), pack.Options{})
	doc := filepath.Join(out, layout.DumpName)
	dst := t.TempDir()
	if res, fs := run(t, doc, dst, unpack.Options{}); res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	d, err := deststate.Open(dst, deststate.Options{Command: "test"}) // the state as a killed run's Save left it
	if err != nil {
		t.Fatal(err)
	}
	s := d.State()
	s.Pending = true
	if err := d.Save(s); err != nil {
		t.Fatal(err)
	}
	d.Close()
	os.Remove(filepath.Join(dst, "a.txt"))
	res, fs := run(t, doc, dst, unpack.Options{Only: []string{"a.txt"}})
	if res.Problems() != 0 || res.Written != 1 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	if s := readState(t, dst); s.Pending {
		t.Errorf("the run committed and left the state pending: %+v", s)
	}
}

// TestEachDocumentMarkedPending: an unpack of two dumps in turn (as
// `rsdump unpack A B` runs them) records itself as pending before every
// commit of each, though the first cleared the mark at its end: killed
// during the second, the next run must know it was cut off.
//
// Not parallel: the commit hook is the package's.
func TestEachDocumentMarkedPending(t *testing.T) {
	first := packDir(t, tree(t, map[string]string{"a.txt": "first"}), pack.Options{})
	second := packDir(t, tree(t, map[string]string{"a.txt": "first", "b.txt": "second"}), pack.Options{At: verifytest.Time.Add(time.Hour)})
	dst := t.TempDir()
	var pending []bool
	unpack.SetHook(func(p string, _ int) {
		if p == unpack.HookCommit {
			pending = append(pending, readState(t, dst).Pending)
		}
	})
	t.Cleanup(func() { unpack.SetHook(func(string, int) {}) })
	res, err := unpack.UnpackAll(context.Background(), []string{filepath.Join(first, layout.DumpName), filepath.Join(second, layout.DumpName)}, dst, unpack.Options{Mapper: mapper(t)})
	if err != nil || res.Problems() != 0 || res.Written != 2 {
		t.Fatalf("%+v, %v", res, err)
	}
	if len(pending) != 2 || !pending[0] || !pending[1] {
		t.Errorf("pending at each commit: %v, want [true true]", pending)
	}
	if readState(t, dst).Pending {
		t.Error("the run ended pending")
	}
}
