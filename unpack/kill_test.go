package unpack_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
	"github.com/rsdump/rsdump/verify/verifytest"
)

// TestMain lets the kill tests re-run this test binary as the unpack
// process they kill.
func TestMain(m *testing.M) {
	if os.Getenv("RSDUMP_KILL_CHILD") != "" {
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
	m, _ := verify.NewMapper(verify.ByURI, verifytest.BaseURL)
	opts := unpack.Options{Mapper: m, Jobs: 1,
		Progress: func(int64) { fmt.Println("staged") },
		Report: func(f verify.Finding) {
			if f.Check == unpack.CheckWritten || f.Check == unpack.CheckDeleted {
				fmt.Println(f.Check, f.Path)
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
	doc := filepath.Join(out, pack.DumpName)
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
		writeState(t, d, unpack.State{ResourceDumpAt: at(1, 0)}) // an empty baseline
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
