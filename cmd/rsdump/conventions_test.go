package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/version"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, stdout, stderr := rsdump(t, args...)
		if code != exitOK || !strings.HasPrefix(stdout, "rsdump ") || !strings.Contains(stdout, runtime.Version()) || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want the Go version", args, code, stdout, stderr)
		}
	}
	code, stdout, _ := rsdump(t, "version", "--json")
	var b version.Info
	if err := json.Unmarshal([]byte(stdout), &b); code != exitOK || err != nil || b.Go != runtime.Version() || b.Version == "" {
		t.Errorf("version --json: exit %d, %v, %+v", code, err, b)
	}
	if code, _, _ := rsdump(t, "version", "extra"); code != exitUsage {
		t.Errorf("version extra: exit %d, want 2", code)
	}
}

// TestHelpCommand: rsdump help CMD prints what CMD --help prints, and
// every command's help ends with two or three examples.
func TestHelpCommand(t *testing.T) {
	t.Parallel()
	for _, c := range commands {
		code, help, _ := rsdump(t, "help", c.name)
		code2, flagHelp, _ := rsdump(t, c.name, "--help")
		if code != exitOK || code2 != exitOK || help != flagHelp {
			t.Errorf("help %s: exit %d, %d; output differs from %s --help", c.name, code, code2, c.name)
		}
		_, examples, ok := strings.Cut(help, "\nExamples:\n")
		n := strings.Count(examples, "\n  rsdump ")
		if strings.HasPrefix(examples, "  rsdump ") {
			n++
		}
		if !ok || n < 2 || n > 3 || strings.Contains(examples, "Flags:") {
			t.Errorf("%s --help does not end with two or three examples: %q", c.name, examples)
		}
	}
	for _, args := range [][]string{{"help", "nope"}, {"help", "pack", "get"}} {
		if code, _, _ := rsdump(t, args...); code != exitUsage {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// TestUsageErrorsExit2: a bad flag value, a wrong number of arguments or
// a relative URL where a URL is required exits 2 for every command, with
// the reason on stderr and nothing on stdout.
func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	src, dst, base := "../../testdata/example", t.TempDir(), "http://127.0.0.1/rs/"
	cases := [][]string{
		{"pack", src, "-o", dst, "--base-url", "127.0.0.1/rs/"},
		{"pack", src, "-o", dst, "--base-url", base, "--dump-url", "/dump/"},
		{"pack", src, "-o", dst, "--base-url", base, "--capability-list", "capabilitylist.xml"},
		{"pack", src, "-o", dst, "--base-url", base, "--level", "12"},
		{"pack", src, "-o", dst, "--base-url", base, "--jobs", "many"},
		{"pack", src, "extra", "-o", dst, "--base-url", base},
		{"pack", src, "-o", dst, "--base-url", base, "--max-package-size", "1X"},
		{"get"},
		{"get", "x.meta4", "--files", "0"},
		{"get", "x.meta4", "--stall-timeout", "20"},
		{"get", "http:/127.0.0.1/x.meta4"},
		{"get", "x.meta4", "--unpack", dst, "--base-url", "rs/"},
		{"metalink"},
		{"metalink", "--check"},
		{"metalink", "f", "--mirror", "mirror/"},
		{"metalink", "f", "--mirror", "http://h/", "--piece-length", "1k"},
		{"verify"},
		{"verify", "--max-ratio", "0.5", "x.zip"},
		{"verify", "--jobs", "-1", "x.zip"},
		{"verify", "--stall-timeout", "0s", "x.zip"},
		{"unpack", "x.zip", "--dest", dst, "--layout", "path", "--stall-timeout", "-1s"},
		{"verify", "https://"},
		{"verify", "--tree", dst, "--against", "x.xml", "--base-url", "rs/"},
		{"unpack", "x.zip"},
		{"unpack", "--dest", dst, "--layout", "path"},
		{"unpack", "a.zip", "https://", "--dest", dst, "--layout", "path"},
		{"unpack", "x.zip", "--dest", dst, "--base-url", "rs/"},
		{"unpack", "http://", "--dest", dst, "--layout", "path"},
		{"unpack", "x.zip", "--dest", dst, "--layout", "zip"},
		{"version", "--bogus"},
		{"sync", "http://127.0.0.1:9/", "--dest", dst, "--pipeline", "8"}, // removed with the pipelining client
		{"sync", "http://127.0.0.1:9/", "--dest", dst, "--fetches", "0"},
	}
	for _, args := range cases {
		code, stdout, stderr := rsdump(t, args...)
		if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, "rsdump: ") {
			t.Errorf("%q: exit %d, want 2\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
		}
	}
}

// TestJSONOneDocument: with --json, stdout holds exactly one JSON value,
// whether the run succeeds, finds problems or fails.
func TestJSONOneDocument(t *testing.T) {
	t.Parallel()
	out := packedExample(t)
	doc := filepath.Join(out, layout.DumpName)
	z, _ := filepath.Glob(filepath.Join(out, "*.zip"))
	meta := filepath.Join(t.TempDir(), "p.meta4")
	if code, _, errs := rsdump(t, "metalink", z[0], "--mirror", "http://h/", "-o", meta); code != exitOK {
		t.Fatal(errs)
	}
	cases := [][]string{
		{"version", "--json"},
		{"pack", "../../testdata/example", "--base-url", verifytest.BaseURL, "-o", t.TempDir(), "--json"},
		{"pack", "/nonexistent", "--base-url", verifytest.BaseURL, "-o", t.TempDir(), "--json"},
		{"pack", "--json"},
		{"verify", doc, "--json"},
		{"verify", "/nonexistent.zip", "--json"},
		{"unpack", doc, "--dest", t.TempDir(), "--base-url", verifytest.BaseURL, "--json"},
		{"unpack", "/nonexistent.zip", "--dest", t.TempDir(), "--base-url", verifytest.BaseURL, "--json"},
		{"get", "/nonexistent.meta4", "--json"},
		{"get", "--json", "--connections", "x"},
		{"metalink", z[0], "--mirror", "http://h/", "-o", filepath.Join(t.TempDir(), "p.meta4"), "--json"},
		{"metalink", z[0], "--mirror", "http://h/", "--json"},
		{"metalink", "--check", "--json", meta, "/nonexistent.meta4"},
		{"audit", "/nonexistent", "--json"},
		{"audit", "--json", "--fraction", "x"},
	}
	for _, args := range cases {
		code, stdout, _ := rsdump(t, args...)
		dec := json.NewDecoder(strings.NewReader(stdout))
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Errorf("%q (exit %d): not JSON: %v\n%s", args, code, err, stdout)
			continue
		}
		if _, err := dec.Token(); err != io.EOF {
			t.Errorf("%q (exit %d): more than one JSON value:\n%s", args, code, stdout)
		}
		// A failed run says so, with the exit status, as README promises.
		if m, ok := v.(map[string]any); ok && code != exitOK && m["error"] != nil && m["exit_status"] != float64(code) {
			t.Errorf("%q (exit %d): exit_status %v in\n%s", args, code, m["exit_status"], stdout)
		}
	}
}

// TestQuietSilencesWarnings: --quiet keeps errors but not warnings.
func TestQuietSilencesWarnings(t *testing.T) {
	t.Parallel()
	out := packedExample(t)
	z, _ := filepath.Glob(filepath.Join(out, "*.zip"))
	// A package of a dump verified on its own, beside a document that
	// lists it, is fine; one that no document lists is a warning.
	stray := filepath.Join(out, "stray.zip")
	copyFile(t, z[0], stray)
	code, stdout, stderr := rsdump(t, "verify", out)
	if code != exitOK || !strings.Contains(stderr, "warning") || !strings.Contains(stdout, "1 warning") {
		t.Fatalf("without --quiet: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	code, stdout, stderr = rsdump(t, "verify", out, "--quiet")
	if code != exitOK || stderr != "" || !strings.Contains(stdout, "1 warning") {
		t.Errorf("with --quiet: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}
