package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rsdump/rsdump/pack"
)

func rsdump(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsageAndHelp(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "Usage:"},
		{[]string{"--help"}, exitOK, "Usage:"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"pack", "--help"}, exitOK, "Exit status"},
		{[]string{"pack"}, exitUsage, "one source directory"},
		{[]string{"pack", "src", "-o", "x"}, exitUsage, "--base-url"},
		{[]string{"pack", "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{[]string{"pack", "src", "-o", "x", "--base-url", "http://h/", "--hash", "crc32"}, exitUsage, `unknown hash algorithm "crc32"`},
		{[]string{"pack", "src", "-o", "x", "--base-url", "http://h/", "--compress", "zstd"}, exitUsage, `unknown compression "zstd"`},
		{[]string{"pack", "src", "-o", "x", "--base-url", "http://h/", "--at", "yesterday"}, exitUsage, "--at"},
		{[]string{"pack", "src", "-o", "x", "--base-url", "http://h/", "--at", "2999-01-01T00:00:00Z"}, exitUsage, "at 2999-01-01T00:00:00Z: later than now plus 5m0s"},
	}
	for _, c := range cases {
		code, out, errs := rsdump(t, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("rsdump %q: exit %d, want %d; output %q lacks %q", c.args, code, c.code, out+errs, c.want)
		}
	}
}

func TestPackExampleJSON(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := rsdump(t, "pack", "../../testdata/example", "--base-url", "http://127.0.0.1/rs/", "-o", out, "--json", "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var s packSummary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("--json output %q: %v", stdout, err)
	}
	if s.Packages != 1 || s.Bitstreams != 9 || s.Bytes == 0 {
		t.Errorf("summary %+v", s)
	}
	if _, err := os.Stat(filepath.Join(out, "resourcedump.xml")); err != nil {
		t.Error(err)
	}
}

// TestPackMissingSource: a source that is not there is a usage error
// (exit 2) naming it, and leaves no output directory and no journal.
func TestPackMissingSource(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := rsdump(t, "pack", "/nonexistent/src", "--base-url", "http://h/", "-o", out)
	if code != exitUsage || !strings.Contains(stderr, "/nonexistent/src") {
		t.Errorf("exit %d, stderr %q; want 2 naming the source", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("output directory created for a missing source")
	}
	out = t.TempDir()
	rsdump(t, "pack", "/nonexistent/src", "--base-url", "http://h/", "-o", out)
	if left, _ := os.ReadDir(out); len(left) > 0 {
		t.Errorf("left in the output directory: %v", left)
	}
}

// TestPackOutputInsideSource: `pack src -o src/out` run twice, as a user
// types it, packs src's files and none of the output (journal, state,
// spool, documents, the previous package), warning that it left the
// output out; `pack . -o .` is refused naming the source, and writes
// nothing.
func TestPackOutputInsideSource(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src", "a"), 0o755)
	os.WriteFile(filepath.Join(dir, "src", "a", "f.txt"), []byte("f"), 0o644)
	t.Chdir(dir)
	for range 2 {
		code, _, stderr := rsdump(t, "pack", "src", "-o", "src/out", "--base-url", "http://127.0.0.1/rs/")
		if code != exitOK || !strings.Contains(stderr, "out: output directory inside the source, skipped") {
			t.Fatalf("pack src -o src/out: exit %d, stderr %q; want 0 and a warning", code, stderr)
		}
		zr, err := zip.OpenReader(filepath.Join(dir, "src", "out", "resourcedump-00001.zip"))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range zr.File {
			names = append(names, f.Name)
		}
		zr.Close()
		if !slices.Equal(names, []string{"resources/a/f.txt", "manifest.xml"}) {
			t.Errorf("pack src -o src/out packed %q, want only resources/a/f.txt", names)
		}
	}
	t.Chdir(filepath.Join(dir, "src", "a"))
	code, _, stderr := rsdump(t, "pack", ".", "-o", ".", "--base-url", "http://127.0.0.1/rs/")
	if code == exitOK || !strings.Contains(stderr, "is also the output directory") {
		t.Errorf("pack . -o .: exit %d, stderr %q; want a refusal", code, stderr)
	}
	if left, _ := os.ReadDir("."); len(left) != 1 {
		t.Errorf("pack . -o ., refused, left %d files, want only f.txt", len(left))
	}
}

// TestPackKilledResumes kills a real rsdump process with SIGKILL once its
// first package exists, runs the same command again, and checks the
// result is byte-identical to an uninterrupted run.
func TestPackKilledResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping subprocess kill test in -short mode")
	}
	bin := buildRsdump(t)
	src := t.TempDir()
	chunk := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, 300000)
	for i := range 40 {
		os.WriteFile(filepath.Join(src, "f"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+string(rune('a'+i/26))), chunk, 0o644)
	}
	args := func(out string) []string {
		return []string{"pack", src, "--base-url", "http://h/", "-o", out, "--at", "2024-01-01T00:00:00Z", "--max-package-size", "3000000", "--quiet"}
	}
	want := t.TempDir()
	if out, err := exec.Command(bin, args(want)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	out := t.TempDir()
	cmd := exec.Command(bin, args(out)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, filepath.Join(out, "resourcedump-00002.zip"))
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(out, "resourcedump.xml")); err == nil {
		t.Skip("the run finished before it was killed; nothing to resume")
	}
	res, err := exec.Command(bin, append(args(out), "--json")...).Output()
	if err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	var s packSummary
	json.Unmarshal(res, &s)
	// The second package may have been renamed but not yet journaled when
	// the kill came; the first one was journaled before it.
	if s.Reused < 1 {
		t.Errorf("resumed run reused %d packages, want at least 1", s.Reused)
	}
	assertSameDir(t, want, out)
}

// built is the command, built once per test binary: linking it takes
// seconds (15 s on a loaded machine), and no test changes it.
var built struct {
	once sync.Once
	dir  string // removed by TestMain
	bin  string
	err  error
}

// buildRsdump builds the command for tests that must kill a real process,
// or run several at once.
func buildRsdump(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "rsdump-test-bin"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "rsdump")
		if out, err := exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

func waitFor(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s did not appear within 30 s", path)
}

// assertSameDir checks that got holds the same visible files as want,
// and the same pack state, byte for byte, and no other hidden file.
func assertSameDir(t *testing.T, want, got string) {
	t.Helper()
	// The state, and its delta after a --changes run.
	state := []string{pack.StateName, pack.StateName + ".delta"}
	wf, _ := filepath.Glob(filepath.Join(want, "*"))
	gf, _ := filepath.Glob(filepath.Join(got, "*"))
	for _, name := range state {
		if _, err := os.Stat(filepath.Join(want, name)); err == nil {
			wf = append(wf, filepath.Join(want, name))
		}
		if _, err := os.Stat(filepath.Join(got, name)); err == nil {
			gf = append(gf, filepath.Join(got, name))
		}
	}
	if len(wf) != len(gf) {
		t.Fatalf("%d files, want %d", len(gf), len(wf))
	}
	for _, w := range wf {
		a, _ := os.ReadFile(w)
		b, err := os.ReadFile(filepath.Join(got, filepath.Base(w)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from the uninterrupted run (%v)", filepath.Base(w), err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(got, ".*"))
	left = slices.DeleteFunc(left, func(p string) bool { return slices.Contains(state, filepath.Base(p)) })
	if len(left) > 0 {
		t.Errorf("hidden files left: %v", left)
	}
}
