package pack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/layout"
)

// resyncRules runs testdata/interop/resync_rules.py, which applies the
// parsing rules of resync (the reference Python library, not installable
// here) to documents.
func resyncRules(t *testing.T, capability string, files ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed: resync parser check skipped")
	}
	script := filepath.Join("..", "testdata", "interop", "resync_rules.py")
	out, err := exec.Command("python3", append([]string{script, capability}, files...)...).CombinedOutput()
	return string(out), err
}

func TestResyncParsesOurDocuments(t *testing.T) {
	t.Parallel()
	peer := filepath.Join("..", "..", "shared", "peers", "resync", "rd-cli")
	if _, err := os.Stat(peer); err != nil {
		t.Skip("../shared/peers/resync missing: resync interoperability check skipped")
	}
	// Calibration: the rules accept what resync itself wrote.
	if out, err := resyncRules(t, "resourcedump-manifest", filepath.Join(peer, "resourcedump00000.zip.manifest.xml")); err != nil {
		t.Fatalf("rules reject resync's own manifest: %s", out)
	}
	o := testOptions()
	o.CapabilityList = "http://127.0.0.1/rs/capabilitylist.xml"
	res, out := mustPack(t, copyExample(t), o)
	if got, err := resyncRules(t, "resourcedump-manifest", filepath.Join(out, res.Packages[0].Manifest)); err != nil || strings.Contains(got, "warning") {
		t.Errorf("manifest: %v\n%s", err, got)
	}
	if got, err := resyncRules(t, "resourcedump", filepath.Join(out, layout.DumpName)); err != nil {
		t.Errorf("resourcedump.xml: %v\n%s", err, got)
	}
	// And the rules can fail: rs:md after the first <url> is refused.
	bad := filepath.Join(t.TempDir(), "bad.xml")
	os.WriteFile(bad, []byte(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><url><loc>http://x/</loc></url><rs:md capability="resourcedump"/></urlset>`), 0o644)
	if got, err := resyncRules(t, "resourcedump", bad); err == nil {
		t.Errorf("rules accepted rs:md after <url>: %s", got)
	}
}
