package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

func changePkg(from, until time.Duration, files ...verifytest.File) verifytest.ChangePackage {
	return verifytest.ChangePackage{From: verifytest.Time.Add(from), Until: verifytest.Time.Add(until), Changes: files}
}

func changed(kind, rel, data string, lastmod time.Duration) verifytest.File {
	return verifytest.File{Rel: rel, Data: data, Change: kind, Lastmod: verifytest.Time.Add(lastmod)}
}

// TestUnpackChangeDumpCLI: the gap, no-baseline, overlap and idempotence
// rules through the command line, with their exit codes and messages.
func TestUnpackChangeDumpCLI(t *testing.T) {
	t.Parallel()
	out := packedExample(t) // a Resource Dump at verifytest.Time
	p1 := changePkg(0, time.Hour,
		changed(resourcesync.ChangeUpdated, "notes/a.txt", "a, second version\n", 10*time.Minute),
		changed(resourcesync.ChangeCreated, "new dir/ñew file.txt", "new\n", 20*time.Minute))
	p2 := changePkg(time.Hour, 2*time.Hour,
		changed(resourcesync.ChangeDeleted, "notes/b.txt", "", 70*time.Minute))
	verifytest.ChangeDump(t, out, []verifytest.ChangePackage{p1, p2})
	cd := filepath.Join(out, verifytest.ChangeDumpName)
	gapped := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{p2})
	p2overlap := p2
	p2overlap.From = verifytest.Time.Add(30 * time.Minute)
	overlapping := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{p1, p2overlap})
	base := []string{"--base-url", verifytest.BaseURL}
	unpackTo := func(dst string, args ...string) (int, string) {
		code, stdout, stderr := rsdump(t, append(append([]string{"unpack"}, args...), append(base, "--dest", dst)...)...)
		return code, stdout + stderr
	}
	snapshot := func() string {
		dst := t.TempDir()
		if code, text := unpackTo(dst, filepath.Join(out, layout.DumpName)); code != exitOK {
			t.Fatalf("baseline: exit %d\n%s", code, text)
		}
		return dst
	}
	at, oneHour := resourcesync.FormatTime(verifytest.Time), resourcesync.FormatTime(verifytest.Time.Add(time.Hour))

	cases := []struct {
		name string
		dst  string
		args []string
		code int
		want []string
	}{
		{"no baseline", t.TempDir(), []string{cd}, exitFailed, []string{"no baseline", "--allow-gap"}},
		{"no baseline allowed", t.TempDir(), []string{cd, "--allow-gap"}, exitOK, []string{"applied anyway (--allow-gap)", "2 packages"}},
		{"gap", snapshot(), []string{gapped}, exitFailed, []string{"gap", at, oneHour, "changedump-00001.zip"}},
		{"gap allowed", snapshot(), []string{gapped, "--allow-gap"}, exitOK, []string{"applied anyway (--allow-gap)", "1 deleted"}},
		{"overlap", snapshot(), []string{overlapping}, exitFailed, []string{"overlap", "changedump-00002.zip", "changedump-00001.zip"}},
		{"continues", snapshot(), []string{cd}, exitOK, []string{"2 packages: 2 files written", "1 deleted"}},
	}
	for _, c := range cases {
		code, text := unpackTo(c.dst, c.args...)
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				code = -1
			}
		}
		if code != c.code {
			t.Errorf("%s: exit %d, want %d with %q\n%s", c.name, code, c.code, c.want, text)
		}
	}

	// The pack output directory: the snapshot, then the changes; again,
	// nothing.
	dst := t.TempDir()
	if code, text := unpackTo(dst, out); code != exitOK || !strings.Contains(text, "3 packages") {
		t.Fatalf("unpack OUTDIR: exit %d\n%s", code, text)
	}
	if code, text := unpackTo(dst, out, "-v"); code != exitOK || !strings.Contains(text, "0 packages: 0 files written (0 B), 0 already present, 0 deleted") ||
		strings.Count(text, "skipped:") != 3 {
		t.Errorf("unpack OUTDIR again: exit %d\n%s", code, text)
	}
	code, stdout, stderr := rsdump(t, "verify", "--tree", dst, "--against", filepath.Join(out, layout.DumpName), "--base-url", verifytest.BaseURL)
	if code != exitFailed || !strings.Contains(stdout+stderr, "new dir/ñew file.txt") {
		t.Errorf("verify --tree against the old snapshot should find the changed tree: exit %d\n%s%s", code, stdout, stderr)
	}
}
