package main

import (
	"archive/zip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
)

func TestEscapeControl(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain café.txt":  "plain café.txt",
		"a\nb":            `a\nb`,
		"\x1b[2Jx":        `\x1b[2Jx`,
		"tab\there\r":     `tab\there\r`,
		"bad\xffutf8":     `bad\xffutf8`,
		"c1\u0085del\x7f": `c1\u0085del\x7f`,
	} {
		if got := escapeControl(in); got != want {
			t.Errorf("escapeControl(%q) = %q, want %q", in, got, want)
		}
	}
}

// Entry names with a newline or an escape sequence reach the human report
// escaped: one finding is one line, and nothing rewrites the terminal.
func TestReportEscapesEntryNames(t *testing.T) {
	t.Parallel()
	_, m := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "a"}})
	z := verifytest.Zip(t, []verifytest.Entry{
		{Name: "resources/a.txt", Data: []byte("a"), Method: zip.Store},
		{Name: "resources/evil\nerror: forged line \x1b[2J.txt", Data: []byte("x"), Method: zip.Store},
		{Name: "manifest.xml", Data: m, Method: zip.Store},
	})
	p := filepath.Join(t.TempDir(), "p.zip")
	os.WriteFile(p, z, 0o644)
	_, stdout, stderr := rsdump(t, "verify", p)
	out := stdout + stderr
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\nerror: forged") {
		t.Errorf("control characters reached the report:\n%q", out)
	}
	if !strings.Contains(out, `evil\nerror: forged line \x1b[2J.txt`) {
		t.Errorf("the entry name is not in the report, escaped:\n%s", out)
	}
}

// Errors joined by errors.Join print one line each; a newline inside one
// (an entry's name) is escaped, so no line can be forged.
func TestPrintErrJoined(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	err := errors.Join(errors.New("p1.zip: every mirror failed"), fmt.Errorf("p2.zip: %w", errors.New("evil\nrsdump: error: forged")))
	printErr(&b, "rsdump: error: ", err)
	want := "rsdump: error: p1.zip: every mirror failed\nrsdump: error: p2.zip: evil\\nrsdump: error: forged\n"
	if b.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	printErr(&b, "rsdump: error: ", fmt.Errorf("get: %w", err)) // wrapped: one line, escaped
	if got := strings.Count(b.String(), "\n"); got != 1 {
		t.Errorf("a wrapped join printed %d lines: %q", got, b.String())
	}
}
