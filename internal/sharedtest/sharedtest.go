// Package sharedtest gives tests the project's shared directory (specs,
// schemas, peers, the Metalink corpus), checked out next to the
// repository, and runs the resync peer from it.
package sharedtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Dir is the shared directory: ../shared beside the repository root.
func Dir() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "..", "shared")
}

// Path returns a path under the shared directory, or skips the test,
// saying so, when it is not there.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{Dir()}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared test data not available (%v); it lives in ../shared next to the repository", err)
	}
	return p
}

// python is Debian's interpreter: the Debian modules resync needs are
// visible to it and not to another Python on the PATH.
const python = "/usr/bin/python3"

// Resync runs the scripts of resync 2.0.2, the reference ResourceSync
// client and builder, from ../shared/peers/resync-src.
type Resync struct {
	dir string
}

// NewResync returns the peer, skipping the test when Python is missing.
// When Python is there but resync's modules are not, the test fails:
// .ci/run installs them, and a skip would hide the gap.
func NewResync(t testing.TB) *Resync {
	t.Helper()
	dir := Path(t, "peers", "resync-src")
	if _, err := os.Stat(python); err != nil {
		t.Skipf("resync peer not run: %s is missing (apt-get install python3)", python)
	}
	out, err := exec.Command(python, "-c", "import dateutil, defusedxml, requests").CombinedOutput()
	if err != nil {
		t.Fatalf("resync peer needs python3-dateutil python3-defusedxml python3-requests (apt-get install them): %v\n%s", err, out)
	}
	return &Resync{dir: dir}
}

// Run runs one resync script (resync-sync, resync-build, ...) in workdir,
// where resync keeps its client state, for at most two minutes, and
// returns its combined output. The proxy variables are cleared: every
// URL a test gives is on loopback.
func (r *Resync) Run(ctx context.Context, workdir, script string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, append([]string{filepath.Join(r.dir, script)}, args...)...)
	cmd.Dir = workdir
	cmd.Env = append(cleanEnv(), "PYTHONPATH="+r.dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToLower(k) {
		case "http_proxy", "https_proxy", "all_proxy", "pythonpath":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "NO_PROXY=*")
}

// Xmllint validates the XML document at path against the shared schema
// (a file of ../shared/schemas, say rs-urlset-1.1.xsd), or skips, saying
// so, when xmllint or the schema is missing.
func Xmllint(t testing.TB, path, schema string) {
	t.Helper()
	if _, err := exec.LookPath("xmllint"); err != nil {
		t.Skip("xmllint not installed (apt-get install libxml2-utils): schema check skipped")
	}
	xsd := Path(t, "schemas", schema)
	if out, err := exec.Command("xmllint", "--noout", "--schema", xsd, path).CombinedOutput(); err != nil {
		t.Errorf("%s does not validate against %s: %v\n%s", path, schema, err, out)
	}
}
