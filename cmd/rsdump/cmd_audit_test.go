package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
)

// syncedCopy is a copy of the example tree kept by rsdump sync from a
// loopback Source.
func syncedCopy(t *testing.T) string {
	doc, _ := servedExample(t)
	dst := t.TempDir()
	if code, _, stderr := rsdump(t, "sync", doc, "--dest", dst, "-q"); code != 0 {
		t.Fatalf("sync: exit %d\n%s", code, stderr)
	}
	return dst
}

// unpackedCopy is a copy of the example tree only ever unpacked: its
// state records no Source.
func unpackedCopy(t *testing.T) string {
	doc, _ := servedExample(t)
	dst := t.TempDir()
	if code, _, stderr := rsdump(t, "unpack", doc, "--dest", dst, "--base-url", verifytest.BaseURL, "-q"); code != 0 {
		t.Fatalf("unpack: exit %d\n%s", code, stderr)
	}
	return dst
}

func flipFile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	os.WriteFile(path, verifytest.Flip(b, len(b)/2), 0o644)
	os.Chtimes(path, fi.ModTime(), fi.ModTime())
}

// TestAuditExitCodes: 0 when every file holds, 1 naming the file that
// does not with the hash expected and found, 2 when it cannot run.
func TestAuditExitCodes(t *testing.T) {
	t.Parallel()
	dst := syncedCopy(t)
	code, stdout, stderr := rsdump(t, "audit", dst)
	if code != 0 || !strings.Contains(stdout, "audited 9 of 9 files") || !strings.Contains(stdout, "9 hold, 0 failed") {
		t.Fatalf("intact: exit %d\n%s\n%s", code, stdout, stderr)
	}
	flipFile(t, filepath.Join(dst, "notes", "b.txt"))
	code, stdout, stderr = rsdump(t, "audit", dst)
	if code != 1 || !strings.Contains(stdout, "1 failed") {
		t.Fatalf("damaged: exit %d\n%s\n%s", code, stdout, stderr)
	}
	line := ""
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "notes/b.txt") {
			line = l
		}
	}
	if !strings.HasPrefix(line, "error: ") || !strings.Contains(line, "expected sha-256:") || !strings.Contains(line, "got sha-256:") {
		t.Errorf("the failure's line %q does not name the file with the hashes", line)
	}
	for _, args := range [][]string{
		{"audit"},
		{"audit", dst, dst},
		{"audit", dst, "--fraction", "1/0"},
		{"audit", dst, "--fraction", "1/7", "--subset", "1/7"},
		{"audit", dst, "--subset", "1/10001"},
		{"audit", dst, "--since-days", "0"},
		{"audit", dst, "--base-url", "rs/"},
		{"audit", t.TempDir()},                 // no copy there
		{"audit", unpackedCopy(t), "--repair"}, // no Source recorded
	} {
		code, stdout, stderr := rsdump(t, args...)
		if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, "rsdump: ") {
			t.Errorf("%q: exit %d, want 2\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
		}
	}
}

// TestAuditRecords: --json prints one document with the failure and the
// summary; --premis and --csv write the run's events; the log in
// DIR/.rsdump/audit holds them too.
func TestAuditRecords(t *testing.T) {
	t.Parallel()
	dst := syncedCopy(t)
	flipFile(t, filepath.Join(dst, "data", "doc.xml"))
	out := t.TempDir()
	premis, csvFile := filepath.Join(out, "premis.xml"), filepath.Join(out, "audit.csv")
	code, stdout, _ := rsdump(t, "audit", dst, "--json", "--premis", premis, "--csv", csvFile)
	var v struct {
		Findings []map[string]string `json:"findings"`
		Summary  struct {
			Checked int    `json:"checked"`
			Failed  int    `json:"failed"`
			URI     string `json:"uri"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != 1 {
		t.Fatalf("exit %d, %v\n%s", code, err, stdout)
	}
	if v.Summary.Checked != 9 || v.Summary.Failed != 1 || v.Summary.URI != verifytest.BaseURL || len(v.Findings) != 1 || v.Findings[0]["path"] != "data/doc.xml" {
		t.Errorf("JSON: %+v", v)
	}
	p, err := os.ReadFile(premis)
	if err != nil || strings.Count(string(p), "<eventType ") != 9 || !strings.Contains(string(p), verifytest.BaseURL+"data/doc.xml") {
		t.Errorf("PREMIS: %v\n%s", err, p)
	}
	c, _ := os.ReadFile(csvFile)
	if strings.Count(string(c), "\n") != 10 {
		t.Errorf("CSV: %s", c)
	}
	n := 0
	f, _ := os.Open(filepath.Join(dst, ".rsdump", "audit", "log.jsonl"))
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
	}
	if n != 10 {
		t.Errorf("the log has %d lines, want 9 checks and a summary", n)
	}
}

// TestAuditRepair: --repair restores a damaged file from the Source the
// copy's state records, by sync's repair path, and records a replacement
// event; the copy then holds.
func TestAuditRepair(t *testing.T) {
	t.Parallel()
	dst := syncedCopy(t)
	target := filepath.Join(dst, "notes", "b.txt")
	want, _ := os.ReadFile(target)
	flipFile(t, target)
	out := t.TempDir()
	premis := filepath.Join(out, "premis.xml")
	code, stdout, stderr := rsdump(t, "audit", dst, "--repair", "--premis", premis)
	if code != 0 || !strings.Contains(stdout, "repaired 1") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got, _ := os.ReadFile(target); string(got) != string(want) {
		t.Errorf("not restored: %q", got)
	}
	p, _ := os.ReadFile(premis)
	if !strings.Contains(string(p), ">replacement</eventType>") {
		t.Errorf("no replacement event:\n%s", p)
	}
	if code, stdout, _ := rsdump(t, "audit", dst); code != 0 || !strings.Contains(stdout, "0 failed") {
		t.Errorf("after the repair: exit %d\n%s", code, stdout)
	}
}
