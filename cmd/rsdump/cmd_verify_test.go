package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/packtest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
)

// packedExample packs testdata/example (with fixed mtimes) and returns the
// output directory.
func packedExample(t *testing.T) string {
	t.Helper()
	src := verifytest.Tree(t, verifytest.ExampleFiles(t))
	return packtest.PackDir(t, src, pack.Options{})
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestVerifyGoodDump(t *testing.T) {
	t.Parallel()
	out := packedExample(t)
	reports := t.TempDir()
	code, stdout, stderr := rsdump(t, "verify", "-q", "--report-dir", reports, out)
	if code != 0 || !strings.Contains(stdout, "9 bitstreams (78.0 KiB): 9 verified, 0 unverified, 0 errors, 0 warnings") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	ok, bad := readCSV(t, filepath.Join(reports, "ok.csv")), readCSV(t, filepath.Join(reports, "notok.csv"))
	if len(ok) != 1+9+1 || len(bad) != 1 || strings.Join(ok[0], ",") != "uri,path,check,expected,actual,severity,message,source" {
		t.Errorf("ok.csv %d rows, notok.csv %d rows; header %v", len(ok), len(bad), ok[0])
	}
}

func TestVerifyJSON(t *testing.T) {
	t.Parallel()
	z := filepath.Join(t.TempDir(), "p.zip")
	os.WriteFile(z, verifytest.Corpus(t)[0].Zip, 0o644) // a flipped bitstream
	code, stdout, _ := rsdump(t, "verify", "--json", z)
	var doc struct {
		Findings []struct{ Severity, Check, Path string }
		Summary  struct{ Errors, Verified int }
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, stdout)
	}
	if code != 1 || doc.Summary.Errors != 3 || doc.Summary.Verified != 2 || doc.Findings[0].Path != "resources/a.txt" {
		t.Errorf("exit %d, %+v", code, doc)
	}
}

func TestVerifyExitCodes(t *testing.T) {
	t.Parallel()
	z := filepath.Join(t.TempDir(), "p.zip")
	os.WriteFile(z, verifytest.Corpus(t)[1].Zip, 0o644)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"verify"}, 2, "at least one TARGET"},
		{[]string{"verify", "/does/not/exist.zip"}, 2, "no such file"},
		{[]string{"verify", "--tree", "x"}, 2, "--against"},
		{[]string{"verify", z}, 1, "crc: CRC-32 mismatch"},
	}
	for _, c := range cases {
		code, stdout, stderr := rsdump(t, c.args...)
		if code != c.code || !strings.Contains(stdout+stderr, c.msg) {
			t.Errorf("%v: exit %d, want %d with %q\nstdout: %s\nstderr: %s", c.args, code, c.code, c.msg, stdout, stderr)
		}
	}
}

func TestVerifyTree(t *testing.T) {
	t.Parallel()
	out := packedExample(t)
	dst := t.TempDir()
	if code, stdout, stderr := rsdump(t, "unpack", "-q", filepath.Join(out, layout.DumpName), "--dest", dst, "--base-url", verifytest.BaseURL); code != 0 {
		t.Fatalf("unpack: exit %d\n%s%s", code, stdout, stderr)
	}
	args := []string{"verify", "--tree", dst, "--against", filepath.Join(out, layout.DumpName), "--base-url", verifytest.BaseURL}
	if code, stdout, _ := rsdump(t, args...); code != 0 || !strings.Contains(stdout, "9 verified") {
		t.Errorf("audit of a good tree: exit %d\n%s", code, stdout)
	}
	os.WriteFile(filepath.Join(dst, "extra.txt"), []byte("x"), 0o644)
	os.Remove(filepath.Join(dst, "empty.txt"))
	code, stdout, stderr := rsdump(t, args...)
	if code != 1 || !strings.Contains(stderr, "extra.txt: extra") || !strings.Contains(stderr, "empty.txt: missing") || !strings.Contains(stdout, "2 errors") {
		t.Errorf("audit of a changed tree: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}
