// Package ziptest has the checks that packages open with the ZIP readers
// users have: Info-ZIP unzip, bsdtar (libarchive) from the file and
// streaming from a pipe, 7-Zip and Python's zipfile. Tests call it; a
// missing tool is skipped with a log line.
package ziptest

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

var tools = [][]string{
	{"unzip", "-tqq"},
	{"bsdtar", "-xOf"},
	{"7z", "t"},
	{"python3", "-c", "import sys,zipfile; z=zipfile.ZipFile(sys.argv[1]); bad=z.testzip(); print(bad or ''); sys.exit(1 if bad else 0)"},
}

// CheckTools tests the archive at path with every installed tool and fails
// t on an error or a warning.
func CheckTools(t testing.TB, path string) {
	t.Helper()
	for _, args := range tools {
		if _, err := exec.LookPath(args[0]); err != nil {
			t.Logf("%s not installed: its interoperability check is skipped", args[0])
			continue
		}
		var out bytes.Buffer
		cmd := exec.Command(args[0], append(args[1:], path)...)
		cmd.Stdout, cmd.Stderr = io.Discard, &out
		if args[0] == "7z" || args[0] == "python3" {
			cmd.Stdout = &out
		}
		err := cmd.Run()
		switch {
		case err != nil:
			t.Errorf("%s %s: %v\n%s", args[0], path, err, tail(out.String()))
		case bytes.Contains(out.Bytes(), []byte("Warning")) || bytes.Contains(out.Bytes(), []byte("Headers Error")):
			t.Errorf("%s %s warned:\n%s", args[0], path, tail(out.String()))
		}
	}
	CheckStreamed(t, path)
}

// CheckStreamed has bsdtar read the archive from a pipe, where it knows
// only the local headers, and fails t unless it extracts cleanly exactly
// the entries of the central directory.
func CheckStreamed(t testing.TB, path string) {
	t.Helper()
	if _, err := exec.LookPath("bsdtar"); err != nil {
		t.Logf("bsdtar not installed: the streaming check is skipped")
		return
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range zr.File {
		want = append(want, strings.TrimSuffix(f.Name, "/"))
	}
	zr.Close()
	for _, args := range [][]string{{"-xOf", "-"}, {"-tf", "-"}} {
		in, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		cmd := exec.Command("bsdtar", args...)
		// Not the *os.File itself: bsdtar would seek in it and read the
		// central directory. Through a pipe it streams.
		cmd.Stdin, cmd.Stderr = struct{ io.Reader }{in}, &errOut
		if args[0] == "-tf" {
			cmd.Stdout = &out
		} else {
			cmd.Stdout = io.Discard
		}
		err = cmd.Run()
		in.Close()
		if err != nil || errOut.Len() > 0 {
			t.Errorf("bsdtar %s < %s: %v\n%s", strings.Join(args, " "), path, err, tail(errOut.String()))
		}
		if args[0] == "-tf" {
			got := strings.Fields(out.String())
			for i := range got {
				got[i] = strings.TrimSuffix(got[i], "/")
			}
			if !slices.Equal(got, want) {
				t.Errorf("bsdtar streaming %s lists %q, the central directory %q", path, got, want)
			}
		}
	}
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
