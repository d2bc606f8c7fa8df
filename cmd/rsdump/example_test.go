package main

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestExampleLoop runs examples/loop.sh, the first command README.md gives
// a newcomer: the whole loop on the bundled example over loopback, each
// sync's copy compared with the tree.
func TestExampleLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rsdump and runs the example loop: not in -short")
	}
	if _, err := exec.LookPath("diff"); err != nil {
		t.Skip("examples/loop.sh not run: diff is missing")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	work := t.TempDir()
	cmd := exec.Command("sh", filepath.Join("..", "..", "examples", "loop.sh"), work)
	cmd.Env = append(cmd.Environ(), "PORT="+strconv.Itoa(port))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("examples/loop.sh: %v\n%s", err, out)
	}
	for _, want := range []string{"the copy is exact\n", "the copy is exact again\n", "11 verified, 0 unverified, 0 errors, 0 warnings"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("examples/loop.sh did not say %q:\n%s", want, out)
		}
	}
}
