package replica_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/serve"
	"github.com/rsdump/rsdump/trs"
)

// TestTRSKeepsModes: a Tracked Resource Set names no file mode, and a
// resource fetched from its URI brings none: an update through the view
// keeps the permission bits of the file it replaces (the ones a package
// gave it, as a Resource Dump's baseline does: run.sh executable,
// secret.txt private), where it made each the default.
func TestTRSKeepsModes(t *testing.T) {
	t.Parallel()
	a, _, set, _ := servePair(t)
	tree := map[string]string{"run.sh": "#!/bin/sh\necho 1\n", "secret.txt": "s1", "plain.txt": "p1"}
	src := verifytest.Tree(t, tree)
	out := t.TempDir()
	base, dump := a.URL+"/res/", a.URL+"/dump/"
	o := pack.Options{BaseURL: base, DumpURL: dump, At: verifytest.Time.Add(time.Hour)}
	if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	h, err := serve.New(out, serve.Options{BaseURL: base, DumpURL: dump, Resources: src, TRS: &trs.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	set(0, h)
	dst := t.TempDir()
	if res, fs, _ := syncRun(t, dump+"trs", dst, replica.Options{}); res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	modes := map[string]fs.FileMode{"run.sh": 0o755, "secret.txt": 0o600}
	for rel, m := range modes {
		os.Chmod(filepath.Join(dst, rel), m)
	}
	for rel := range tree {
		p := filepath.Join(src, rel)
		os.WriteFile(p, []byte(tree[rel]+" changed"), 0o644)
		mt := verifytest.Time.Add(90 * time.Minute)
		os.Chtimes(p, mt, mt)
	}
	o.Changes, o.At = true, verifytest.Time.Add(2*time.Hour)
	if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	if res, fs, _ := syncRun(t, "", dst, replica.Options{}); res.Problems() != 0 || res.Written != 3 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	plain, _ := os.Stat(filepath.Join(src, "plain.txt")) // the default mode, as created here
	modes["plain.txt"] = plain.Mode().Perm()
	for rel, want := range modes {
		fi, err := os.Stat(filepath.Join(dst, rel))
		if b, _ := os.ReadFile(filepath.Join(dst, rel)); err != nil || string(b) != tree[rel]+" changed" || fi.Mode().Perm() != want {
			t.Errorf("%s: %q, mode %v (%v); want the update, mode %v", rel, b, fi.Mode().Perm(), err, want)
		}
	}
}
