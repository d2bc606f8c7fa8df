package replica_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/internal/verifytest"
)

// repackTree is a Source tree of random files in several packages, with
// a file that will become a directory and a directory that will become a
// file.
func repackTree() map[string]string {
	f := randomFiles(60, 20000)
	f["x/y.bin"] = strings.Repeat("y", 3000)
	f["z.bin"] = strings.Repeat("z", 3000)
	return f
}

// repack changes the Source's tree as a month of work would (files
// changed, added, deleted; a directory become a file and a file a
// directory) and packs it again, a full Resource Dump, no --changes.
func repack(p *packed, o pack.Options) {
	p.write(map[string]string{
		"d0/f0000.bin": strings.Repeat("changed 0 ", 1500),
		"d3/f0010.bin": strings.Repeat("changed 10 ", 1800),
		"new/a.bin":    strings.Repeat("new a ", 900),
		"d1/f0001.bin": "", "d2/f0002.bin": "",
		"x": "", "z.bin": "",
	})
	p.write(map[string]string{"x": "x is a file now", "z.bin/w.bin": "z.bin is a directory now"})
	p.pack(false, o)
}

// TestRepackReachesDestination: a Source that publishes only full
// Resource Dumps (re-packed, no --changes) reaches its Destination: the
// second sync re-bases the tree to the new dump exactly (changed and new
// files written, deleted ones removed, a directory become a file and a
// file a directory in the same run, a file of the user's own kept), its
// dry run plans the same, and only the bitstreams that differ are
// fetched, from inside the packages by ranges: a small part of the
// dump's bytes, counted at the server. A third sync is up to date and
// fetches nothing.
func TestRepackReachesDestination(t *testing.T) {
	p := newPacked(t, repackTree())
	o := pack.Options{Compress: pack.Store, MaxPackageSize: 300000}
	p.pack(false, o)
	dst := t.TempDir()
	if res, fs, _ := syncRun(t, p.capabilities(), dst, replica.Options{}); res.Problems() != 0 {
		t.Fatalf("first sync: %+v\n%s", res, problems(fs))
	}
	verifytest.WriteFiles(t, dst, map[string]string{"mine.txt": "the user's own"})
	repack(p, o)
	dumpBytes := dumpLength(t, p.out)

	p.zipBytes.Store(0)
	dry, fs, _ := syncRun(t, "", dst, replica.Options{DryRun: true})
	if dry.Problems() != 0 || p.zipBytes.Load() != 0 {
		t.Errorf("dry run: %+v, %d package bytes served\n%s", dry, p.zipBytes.Load(), problems(fs))
	}
	res, fs, notes := syncRun(t, "", dst, replica.Options{})
	served := p.zipBytes.Load()
	if res.Problems() != 0 || len(res.Steps) != 1 || res.Steps[0].Kind != "rebase" {
		t.Fatalf("re-base: %+v steps %+v\n%s\n%s", res, res.Steps, strings.Join(notes, "\n"), problems(fs))
	}
	want := verifytest.ReadTree(t, p.src)
	want["mine.txt"] = "the user's own"
	sameTree(t, dst, want)
	if res.Written != 5 || res.Deleted != 4 {
		t.Errorf("re-base wrote %d and deleted %d, want 5 and 4", res.Written, res.Deleted)
	}
	if d, r := dry.Result, res.Result; d.Written != r.Written || d.Deleted != r.Deleted || d.Present != r.Present || d.Bytes != r.Bytes {
		t.Errorf("dry run planned %+v, the run did %+v", d, r)
	}
	if served == 0 || served > dumpBytes/10 {
		t.Errorf("the re-base was served %d package bytes of %d", served, dumpBytes)
	}
	t.Logf("re-base: %d of %d package bytes served", served, dumpBytes)
	st, err := deststate.Read(dst)
	if err != nil || st.Unfinished != nil || !st.ResourceDumpAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("state after the re-base: %+v (%v)", st, err)
	}

	p.zipBytes.Store(0)
	again, fs, _ := syncRun(t, "", dst, replica.Options{})
	if again.Problems() != 0 || len(again.Steps) != 0 || p.zipBytes.Load() != 0 {
		t.Errorf("third sync: %+v steps %+v, %d package bytes\n%s", again, again.Steps, p.zipBytes.Load(), problems(fs))
	}
}

// dumpLength is the bytes of the packages the dump in out lists.
func dumpLength(t *testing.T, out string) int64 {
	t.Helper()
	_, urls := verifytest.ReadDoc(t, filepath.Join(out, layout.DumpName))
	var n int64
	for _, u := range urls {
		n += *u.MD.Length
	}
	return n
}

var _ = os.Stat
var _ = finding.OK
var _ = unpack.CheckWritten
