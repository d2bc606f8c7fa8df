package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
)

func TestUnpackExitCodes(t *testing.T) {
	t.Parallel()
	out := packedExample(t)
	doc := filepath.Join(out, layout.DumpName)
	dst := t.TempDir()
	broken := filepath.Join(t.TempDir(), "p.zip")
	os.WriteFile(broken, verifytest.Corpus(t)[0].Zip, 0o644)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"unpack", doc}, 2, "--dest"},
		{[]string{"unpack", doc, "--dest", dst}, 2, "--base-url"},
		{[]string{"unpack", doc, "--dest", dst, "--layout", "zip"}, 2, "unknown layout"},
		{[]string{"unpack", "/does/not/exist.xml", "--dest", dst, "--base-url", verifytest.BaseURL}, 2, "no such file"},
		{[]string{"unpack", doc, "--dest", dst, "--base-url", verifytest.BaseURL, "-v"}, 0, "written: notes/deep/c.txt"},
		{[]string{"unpack", doc, "--dest", dst, "--base-url", verifytest.BaseURL}, 0, "0 files written (0 B), 9 already present"},
		{[]string{"unpack", broken, "--dest", t.TempDir(), "--base-url", verifytest.BaseURL}, 1, "refused: not written"},
	}
	for _, c := range cases {
		code, stdout, stderr := rsdump(t, c.args...)
		if code != c.code || !strings.Contains(stdout+stderr, c.msg) {
			t.Errorf("%v: exit %d, want %d with %q\nstdout: %s\nstderr: %s", c.args, code, c.code, c.msg, stdout, stderr)
		}
	}
}

// TestUnpackWrongBaseURL: a --base-url no bitstream is under is one
// error naming the prefix the manifests use, exit 2, nothing written.
func TestUnpackWrongBaseURL(t *testing.T) {
	t.Parallel()
	out := packedExample(t)
	dst := t.TempDir()
	code, stdout, stderr := rsdump(t, "unpack", filepath.Join(out, layout.DumpName), "--dest", dst, "--base-url", "http://127.0.0.2/other/")
	if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "base URL is "+verifytest.BaseURL) {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

func TestUnpackReportDir(t *testing.T) {
	t.Parallel()
	broken := filepath.Join(t.TempDir(), "p.zip")
	os.WriteFile(broken, verifytest.Corpus(t)[0].Zip, 0o644)
	reports := t.TempDir()
	code, _, _ := rsdump(t, "unpack", "-q", broken, "--dest", t.TempDir(), "--base-url", verifytest.BaseURL, "--report-dir", reports)
	ok, bad := readCSV(t, filepath.Join(reports, "ok.csv")), readCSV(t, filepath.Join(reports, "notok.csv"))
	if code != 1 || len(ok) != 3 || len(bad) != 5 {
		t.Errorf("exit %d, ok.csv %v, notok.csv %v", code, ok, bad)
	}
}
