package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rsdump/rsdump/layout"
)

// changesTree writes 40 files of 2.1 MB, each with content seeded by gen
// and the mtime given.
func changesTree(t *testing.T, src string, gen byte, mtime time.Time) {
	t.Helper()
	for i := range 40 {
		data := bytes.Repeat([]byte{gen, byte(i), 3, 4, 5, 6, 7}, 300000)
		p := filepath.Join(src, "f "+string(rune('a'+i%26))+string(rune('a'+i/26)))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, mtime, mtime)
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from+"/.", to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
}

// TestPackChangesKilledResumes kills a real rsdump pack --changes with
// SIGKILL once its second package exists, runs the same command again,
// and checks the output is byte-identical to an uninterrupted run: the
// journal, keyed by the baseline too, gives the rerun the same packages.
func TestPackChangesKilledResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping subprocess kill test in -short mode")
	}
	bin := buildRsdump(t)
	src, base := t.TempDir(), t.TempDir()
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	changesTree(t, src, 1, t0.Add(-time.Hour))
	if out, err := exec.Command(bin, "pack", src, "--base-url", "http://127.0.0.1/d/", "-o", base, "--at", "2024-01-01T00:00:00Z", "-q").CombinedOutput(); err != nil {
		t.Fatalf("full pack: %v\n%s", err, out)
	}
	changesTree(t, src, 2, t0.Add(10*time.Minute))
	args := func(out string) []string {
		return []string{"pack", "--changes", src, "--base-url", "http://127.0.0.1/d/", "-o", out, "--at", "2024-01-01T01:00:00Z", "--max-package-size", "3000000", "--quiet"}
	}
	want, out := t.TempDir(), t.TempDir()
	copyTree(t, base, want)
	copyTree(t, base, out)
	if msg, err := exec.Command(bin, args(want)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, msg)
	}
	cmd := exec.Command(bin, args(out)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, filepath.Join(out, "changedump-00002.zip"))
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(out, layout.ChangeDumpName)); err == nil {
		t.Skip("the run finished before it was killed; nothing to resume")
	}
	res, err := exec.Command(bin, append(args(out), "--json")...).Output()
	if err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	var s packSummary
	json.Unmarshal(res, &s)
	if s.Reused < 1 || s.Changes == nil || s.Changes.Updated != 40 {
		t.Errorf("resumed run: %s; want at least 1 package reused and 40 updates", res)
	}
	assertSameDir(t, want, out)
}

// TestPackChangesCLI: the flags, the summary, a run with no change, and
// a baseline that is not one.
func TestPackChangesCLI(t *testing.T) {
	t.Parallel()
	src, out := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(src, "a"), []byte("a0"), 0o644)
	os.Chtimes(filepath.Join(src, "a"), time.Unix(1e9, 0), time.Unix(1e9, 0))
	if code, _, stderr := rsdump(t, "pack", src, "--base-url", "http://127.0.0.1/d/", "-o", out, "-q"); code != 0 {
		t.Fatalf("full pack: %d %s", code, stderr)
	}
	if code, _, stderr := rsdump(t, "pack", "--since", "x", src, "--base-url", "http://127.0.0.1/d/", "-o", out); code != exitUsage || !strings.Contains(stderr, "--changes") {
		t.Errorf("--since without --changes: exit %d, %s", code, stderr)
	}
	code, stdout, stderr := rsdump(t, "pack", "--changes", src, "--base-url", "http://127.0.0.1/d/", "-o", out)
	if code != 0 || !strings.Contains(stdout, "no change since") {
		t.Errorf("no change: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	os.WriteFile(filepath.Join(src, "b"), []byte("b0"), 0o644)
	code, stdout, _ = rsdump(t, "pack", "--changes", src, "--base-url", "http://127.0.0.1/d/", "-o", out, "--json")
	var s packSummary
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil || s.Changes == nil || s.Changes.Created != 1 || s.Packages != 1 ||
		s.Document != filepath.Join(out, layout.ChangeDumpName) {
		t.Errorf("one creation: exit %d, %s", code, stdout)
	}
	bad := filepath.Join(out, "changedump-00001.manifest.xml")
	code, _, stderr = rsdump(t, "pack", "--changes", "--since", bad, src, "--base-url", "http://127.0.0.1/d/", "-o", t.TempDir())
	if code != 1 || !strings.Contains(stderr, bad) || !strings.Contains(stderr, "not a baseline") {
		t.Errorf("a manifest as baseline: exit %d, %s", code, stderr)
	}
}

// TestChangesGC: pack --changes runs with changesGCPercent and gives the
// collector its setting back; without --changes, or with GOGC set, the
// setting is left alone.
func TestChangesGC(t *testing.T) {
	gogc := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	before := gogc()
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	restore := changesGC(true)
	if got := gogc(); got != changesGCPercent {
		t.Errorf("during --changes GOGC is %d, want %d", got, changesGCPercent)
	}
	restore()
	if got := gogc(); got != before {
		t.Errorf("after --changes GOGC is %d, want %d back", got, before)
	}
	restore = changesGC(false)
	if got := gogc(); got != before {
		t.Errorf("without --changes GOGC is %d, want %d", got, before)
	}
	restore()
	t.Setenv("GOGC", "150")
	restore = changesGC(true)
	if got := gogc(); got != before {
		t.Errorf("with GOGC set GOGC is %d, want %d", got, before)
	}
	restore()
}
