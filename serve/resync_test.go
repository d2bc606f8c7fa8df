package serve_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/sharedtest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/serve"
)

// resync-sync, the reference ResourceSync client, syncs a baseline from
// rsdump serve knowing only the resources' base URL: it finds the Source
// Description at the host's well-known URI, the Capability List, the
// Resource List, and fetches every resource from --resources, ending with
// the same tree.
func TestResyncBaselineFromServe(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the resync peer")
	}
	peer := sharedtest.NewResync(t)
	ts, u := listen(t)
	fs := files(12)
	fs["sub dir/ü ber.txt"] = "non-ASCII and a space"
	src := verifytest.Tree(t, fs)
	dir := t.TempDir()
	o := pack.Options{BaseURL: u + "/res/", DumpURL: u + "/dump/", SourceDescription: true, Hashes: []string{"md5", "sha-256"}}
	if _, err := pack.Pack(context.Background(), src, dir, o); err != nil {
		t.Fatal(err)
	}
	s := startSite(t, ts, u, src, dir, serve.Options{Resources: src})
	dest := t.TempDir()
	out, err := peer.Run(context.Background(), t.TempDir(), "resync-sync", "--baseline", "--hash", "sha-256", s.URL+"/res/="+dest)
	if err != nil {
		t.Fatalf("resync-sync: %v\n%s", err, out)
	}
	for rel, content := range fs {
		got, err := os.ReadFile(filepath.Join(dest, resyncName(rel)))
		if err != nil || string(got) != content {
			t.Errorf("%s: %v, %d bytes, want %d\n%s", rel, err, len(got), len(content), out)
		}
	}
	n := 0
	filepath.WalkDir(dest, func(_ string, d os.DirEntry, _ error) error {
		if d != nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if n != len(fs) {
		t.Errorf("%d files in the copy, want %d", n, len(fs))
	}
}

// resyncName is where resync-sync stores a resource: at its URL path
// relative to the mapped prefix, still percent-encoded ("sub%20dir").
func resyncName(rel string) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return filepath.Join(segs...)
}
