package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
)

// servedExample packs the example tree with package URLs on a loopback
// server serving the output, and returns the dump document's URL.
func servedExample(t *testing.T) (doc, out string) {
	out = t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	t.Cleanup(srv.Close)
	src := verifytest.Tree(t, verifytest.ExampleFiles(t))
	o := pack.Options{BaseURL: verifytest.BaseURL, DumpURL: srv.URL + "/", At: verifytest.Time}
	if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	return srv.URL + "/" + layout.DumpName, out
}

func TestSyncExitCodes(t *testing.T) {
	t.Parallel()
	doc, _ := servedExample(t)
	dst := t.TempDir()
	empty := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(empty.Close)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"sync", doc}, 2, "--dest"},
		{[]string{"sync", "--dest", dst}, 2, "records no Source"},
		{[]string{"sync", "http:/x", "--dest", dst}, 2, "not an absolute http(s) URL"},
		{[]string{"sync", empty.URL + "/", "--dest", dst}, 2, "no ResourceSync document found"},
		{[]string{"sync", doc, "--dest", dst, "--dry-run"}, 0, "9 files to write (dry run)"},
		{[]string{"sync", doc, "--dest", dst, "-v"}, 0, "written: notes/deep/c.txt"},
		{[]string{"sync", "--dest", dst, "--audit"}, 0, "up to date: 0 packages: 0 files written (0 B), 0 already present, 0 deleted, 0 refused; 0 errors, 0 unverified, 0 warnings; audit: 9 files verified, 0 errors"},
	}
	for _, c := range cases {
		code, stdout, stderr := rsdump(t, c.args...)
		if code != c.code || !strings.Contains(stdout+stderr, c.msg) {
			t.Errorf("%v: exit %d, want %d with %q\nstdout: %s\nstderr: %s", c.args, code, c.code, c.msg, stdout, stderr)
		}
	}
	for rel, data := range verifytest.ExampleFiles(t) {
		if b, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(rel))); err != nil || string(b) != data {
			t.Errorf("%s: %v", rel, err)
		}
	}
}

// TestSyncJSON prints one JSON document with the findings and a summary
// naming the Source, the steps and the base URL; a refused bitstream
// exits 1.
func TestSyncJSON(t *testing.T) {
	t.Parallel()
	doc, out := servedExample(t)
	dst := t.TempDir()
	code, stdout, stderr := rsdump(t, "sync", doc, "--dest", dst, "--json")
	var v struct {
		Findings []map[string]string `json:"findings"`
		Summary  struct {
			Source struct {
				Docs map[string]string `json:"documents"`
			} `json:"source"`
			BaseURL string `json:"base_url"`
			Steps   []struct {
				Kind string `json:"kind"`
			} `json:"steps"`
			Written int `json:"written"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, stdout, stderr)
	}
	if v.Summary.Written != 9 || v.Summary.BaseURL != verifytest.BaseURL || len(v.Summary.Steps) != 1 || v.Summary.Source.Docs["resourcedump"] != doc {
		t.Errorf("summary: %+v", v.Summary)
	}
	// A damaged package in a fresh copy: exit 1, the findings say why.
	zp := filepath.Join(out, "resourcedump-00001.zip")
	z, _ := os.ReadFile(zp)
	os.WriteFile(zp, verifytest.Flip(z, len(z)/3), 0o644)
	code, stdout, _ = rsdump(t, "sync", doc, "--dest", t.TempDir(), "--json")
	if code != 1 || !strings.Contains(stdout, `"severity": "error"`) && !strings.Contains(stdout, `"severity":"error"`) {
		t.Errorf("damaged package: exit %d\n%s", code, stdout)
	}
}
