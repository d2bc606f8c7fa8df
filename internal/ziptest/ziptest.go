// Package ziptest has the checks that packages open with the ZIP readers
// users have: Info-ZIP unzip, bsdtar (libarchive), 7-Zip and Python's
// zipfile. Tests call it; a missing tool is skipped with a log line.
package ziptest

import (
	"bytes"
	"io"
	"os/exec"
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
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
