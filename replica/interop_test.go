package replica_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/sharedtest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/replica"
)

// TestSyncFromResyncSource: rsdump sync against a Source that resync-build
// published (a Resource List, a Capability List, later a Change List, under
// a plain static server, the resources under it) ends with the Source's
// tree, before and after creations, updates and deletions.
func TestSyncFromResyncSource(t *testing.T) {
	if testing.Short() {
		t.Skip("peer test skipped with -short")
	}
	rs := sharedtest.NewResync(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pub := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(pub)))
	t.Cleanup(srv.Close)
	resDir := filepath.Join(pub, "res")
	tree := files(25, 700)
	tree["top.txt"] = "at the top"
	verifytest.WriteFiles(t, resDir, tree)
	build := func(args ...string) {
		t.Helper()
		if out, err := rs.Run(ctx, t.TempDir(), "resync-build", args...); err != nil {
			t.Fatalf("resync-build %v: %v\n%s", args, err, out)
		}
	}
	mapping := srv.URL + "/res/=" + resDir
	build("--write-resourcelist", "--hash", "md5", "--hash", "sha-256", "--outfile", filepath.Join(pub, "resourcelist.xml"), mapping)
	build("--write-capabilitylist", "resourcelist="+srv.URL+"/resourcelist.xml,changelist="+srv.URL+"/changelist.xml",
		"--outfile", filepath.Join(pub, "capabilitylist.xml"))

	dst := t.TempDir()
	res, fs, _ := syncRun(t, srv.URL+"/capabilitylist.xml", dst, replica.Options{Audit: true})
	if res.Problems() != 0 || res.Written != len(tree) || res.Audit == nil || res.Audit.Problems() != 0 {
		t.Fatalf("baseline: %+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, tree)

	// Change the Source; resync-build writes the Change List against the
	// Resource List the Destination synced from.
	later := time.Now().Add(2 * time.Second)
	change := map[string]string{"d0/f000.txt": "updated by the source", "new/created.txt": "created by the source"}
	for rel, data := range change {
		p := filepath.Join(resDir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(data), 0o644)
		os.Chtimes(p, later, later)
		tree[rel] = data
	}
	os.Remove(filepath.Join(resDir, "d1", "f001.txt"))
	delete(tree, "d1/f001.txt")
	build("--write-changelist", "--hash", "md5", "--hash", "sha-256", "--reference", filepath.Join(pub, "resourcelist.xml"), "--outfile", filepath.Join(pub, "changelist.xml"), mapping)

	res, fs, _ = syncRun(t, "", dst, replica.Options{})
	if res.Problems() != 0 || res.Written != 2 || res.Deleted != 1 || len(res.Steps) != 1 || res.Steps[0].Kind != "incremental" {
		t.Fatalf("incremental: %+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, tree)
}
