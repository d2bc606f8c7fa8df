package pack

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/unixnano"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/resourcesync"
)

// stateRecords reads the state a run left in out: its header and files.
func stateRecords(t *testing.T, out string) (stateHead, []record) {
	t.Helper()
	s, head, err := openState(filepath.Join(out, StateName))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	var recs []record
	for {
		r, ok, err := s.next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return head, recs
		}
		recs = append(recs, r)
	}
}

// manifestFiles reads the detached manifests of pkgs and returns, by
// path, the last version of each file they pack (not deletions), as a
// state record, and how many packages listed at least one file.
func manifestFiles(t *testing.T, out, base string, pkgs []PackageInfo) (map[string]record, int) {
	t.Helper()
	files, withFiles := map[string]record{}, 0
	for _, p := range pkgs {
		f, err := os.Open(filepath.Join(out, p.Manifest))
		if err != nil {
			t.Fatal(err)
		}
		_, urls := decodeAll(t, f)
		f.Close()
		n := 0
		for _, u := range urls {
			if u.MD.Change == resourcesync.ChangeDeleted {
				continue
			}
			rel, err := relOf(base, u.Loc)
			if err != nil {
				t.Fatal(err)
			}
			files[rel] = record{Rel: rel, Size: *u.MD.Length, Mtime: unixnano.Of(u.Lastmod), Hash: u.MD.Hash, Type: u.MD.Type}
			n++
		}
		if n > 0 {
			withFiles++
		}
	}
	return files, withFiles
}

// sourceHashes is the hash attribute of every file under src with algs,
// computed here from the bytes.
func sourceHashes(t *testing.T, src string, algs []string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	for rel, data := range verifytest.ReadTree(t, src) {
		mh, err := digest.NewMulti(algs...)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(mh, data)
		sums[rel] = mh.Sums().String()
	}
	return sums
}

// TestStateIsWhatTheManifestsSay: after a Resource Dump of several
// packages, the state lists every file once, in walk order, as its
// manifest entry gives it; after a --changes run of several packages
// that creates, updates and deletes, every file packed is in the state
// as its last manifest entry gives it, and the whole state is the one a
// full pack of the source now writes.
func TestStateIsWhatTheManifestsSay(t *testing.T) {
	t.Parallel()
	src, out := t.TempDir(), t.TempDir()
	old := hour(0).Add(-time.Hour)
	names := []string{"a.txt", "b c.txt", "dir/d.txt", "dir/sub/e.txt", "f.bin", "ü/é.txt", "z.txt"}
	for _, rel := range names {
		put(t, src, rel, "v0 of "+rel, old)
	}
	o := chgOptions(0)
	o.MaxEntries = 2
	res := packAt(t, src, out, o)
	files, withFiles := manifestFiles(t, out, chgBase, res.Packages)
	if withFiles < 3 {
		t.Fatalf("%d packages list files, want several", withFiles)
	}
	head, recs := stateRecords(t, out)
	if head.Kind != resourcesync.CapResourceDump || !head.Time.Equal(hour(0)) || len(recs) != len(names) || len(files) != len(names) {
		t.Fatalf("state %+v lists %d files, manifests %d, want %d", head, len(recs), len(files), len(names))
	}
	for _, r := range recs {
		if r != files[r.Rel] {
			t.Errorf("state has %+v, the manifests %+v", r, files[r.Rel])
		}
	}

	// Two updates, two creations, a deletion, in packages of two entries.
	put(t, src, "a.txt", "a updated", hour(0).Add(10*time.Minute))
	put(t, src, "dir/sub/e.txt", "e updated, longer", hour(0).Add(20*time.Minute))
	put(t, src, "dir/new.txt", "created", hour(0).Add(30*time.Minute))
	put(t, src, "y new.txt", "created too", hour(0).Add(40*time.Minute))
	os.Remove(filepath.Join(src, "f.bin"))
	o = chgOptions(1)
	o.MaxEntries = 2
	res = packAt(t, src, out, o)
	if res.Created != 2 || res.Updated != 2 || res.Deleted != 1 || len(res.Packages) < 3 {
		t.Fatalf("--changes: %+v in %d packages, want 2 created, 2 updated, 1 deleted in several", res, len(res.Packages))
	}
	packed, _ := manifestFiles(t, out, chgBase, res.Packages)
	if len(packed) != 4 {
		t.Fatalf("the Change Dump packs %d files, want 4", len(packed))
	}
	head, recs = stateRecords(t, out)
	if head.Kind != resourcesync.CapChangeDump || !head.Time.Equal(res.Until) {
		t.Errorf("state header %+v, want a changedump until %s", head, res.Until)
	}
	seen := 0
	for _, r := range recs {
		if want, ok := packed[r.Rel]; ok {
			seen++
			if r != want {
				t.Errorf("state has %+v, the Change Dump's manifest %+v", r, want)
			}
		}
	}
	if seen != len(packed) {
		t.Errorf("the state has %d of the %d files packed", seen, len(packed))
	}
	full := t.TempDir()
	packAt(t, src, full, chgOptions(0))
	_, want := stateRecords(t, full)
	if len(recs) != len(want) {
		t.Fatalf("state after --changes lists %d files, a full pack %d", len(recs), len(want))
	}
	for i := range want {
		if recs[i] != want[i] {
			t.Errorf("state after --changes has %+v, a full pack %+v", recs[i], want[i])
		}
	}
}

var hexRE = regexp.MustCompile(`(sha-256|md5):[0-9a-f]+`)

// TestStateNotReadBack: the state is what the run recorded as it wrote
// its packages, not what the detached manifests say once it has written
// them. Each detached manifest is altered as soon as its package is
// published (every hash zeroed); the state still has the true hash of
// every file, computed here from the source, in both kinds of dump.
func TestStateNotReadBack(t *testing.T) {
	t.Parallel()
	src, out := t.TempDir(), t.TempDir()
	old := hour(0).Add(-time.Hour)
	for _, rel := range []string{"a.txt", "b.txt", "dir/c.txt", "dir/d.txt", "e.txt"} {
		put(t, src, rel, "v0 of "+rel, old)
	}
	tampered := 0
	tamper := func(e finding.Event) {
		pd, ok := e.(PackageDone)
		if !ok {
			return
		}
		p := filepath.Join(out, pd.Package.Manifest)
		b := readFile(t, p)
		z := hexRE.ReplaceAllFunc(b, func(m []byte) []byte {
			i := bytes.IndexByte(m, ':')
			return append(m[:i+1:i+1], strings.Repeat("0", len(m)-i-1)...)
		})
		if bytes.Equal(z, b) {
			t.Errorf("%s: no hash to alter", p)
		}
		if err := os.WriteFile(p, z, 0o644); err != nil {
			t.Fatal(err)
		}
		tampered++
	}
	check := func(what string, wantFiles int) {
		t.Helper()
		sums := sourceHashes(t, src, []string{digest.SHA256})
		_, recs := stateRecords(t, out)
		if len(recs) != wantFiles || len(sums) != wantFiles {
			t.Fatalf("%s: the state lists %d files, the source has %d, want %d", what, len(recs), len(sums), wantFiles)
		}
		for _, r := range recs {
			if r.Hash != sums[r.Rel] {
				t.Errorf("%s: the state gives %s %s, its bytes hash to %s", what, r.Rel, r.Hash, sums[r.Rel])
			}
		}
	}
	o := chgOptions(0)
	o.MaxEntries, o.Events = 2, tamper
	packAt(t, src, out, o)
	if tampered < 3 {
		t.Fatalf("%d manifests altered, want every package's", tampered)
	}
	check("Resource Dump", 5)

	tampered = 0
	put(t, src, "b.txt", "b updated", hour(0).Add(10*time.Minute))
	put(t, src, "dir/new.txt", "created", hour(0).Add(20*time.Minute))
	put(t, src, "e.txt", "e updated", hour(0).Add(30*time.Minute))
	o = chgOptions(1)
	o.MaxEntries, o.Events = 2, tamper
	res := packAt(t, src, out, o)
	if tampered != len(res.Packages) || tampered < 2 {
		t.Fatalf("%d manifests altered of %d packages, want several", tampered, len(res.Packages))
	}
	check("Change Dump", 6)
}

// TestStateAfterResume: a run interrupted after its first package and run
// again takes the files of the packages it reuses from their manifests
// (this run did not write them): the state is the same, byte for byte, as
// an uninterrupted run's, for a Resource Dump and a Change Dump.
func TestStateAfterResume(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	old := hour(0).Add(-time.Hour)
	for _, c := range "abcdefghij" {
		put(t, src, string(c)+".txt", strings.Repeat(string(c), 3000), old)
	}
	packRun := func(out string, o Options, interrupt bool) *Result {
		t.Helper()
		o.MaxPackageSize = 4000
		if !interrupt {
			return packAt(t, src, out, o)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		o.Events = func(e finding.Event) {
			if _, ok := e.(PackageDone); ok {
				cancel()
			}
		}
		if _, err := Pack(ctx, src, out, o); err == nil {
			t.Fatal("interrupted Pack returned no error")
		}
		o.Events = nil
		res := packAt(t, src, out, o)
		if !res.Packages[0].Reused || res.Packages[len(res.Packages)-1].Reused {
			t.Fatalf("first package reused %v, last %v; want true, false", res.Packages[0].Reused, res.Packages[len(res.Packages)-1].Reused)
		}
		return res
	}
	want, got := t.TempDir(), t.TempDir()
	packRun(want, chgOptions(0), false)
	packRun(got, chgOptions(0), true)
	if !bytes.Equal(readFile(t, filepath.Join(got, StateName)), readFile(t, filepath.Join(want, StateName))) {
		t.Error("Resource Dump: the resumed run's state differs from an uninterrupted run's")
	}
	// A --changes run adds to the state's delta: the second resumes with
	// a delta there already, which the journal's key names.
	for k := 1; k <= 2; k++ {
		for _, c := range "abcdefghij" {
			put(t, src, string(c)+".txt", strings.Repeat(string(c), 3000+k), hour(k-1).Add(time.Duration(c)*time.Second))
		}
		packRun(want, chgOptions(k), false)
		res := packRun(got, chgOptions(k), true)
		if len(res.Packages) < 3 {
			t.Fatalf("run %d: %d change packages, want several", k, len(res.Packages))
		}
		for _, name := range []string{StateName, StateName + deltaSuffix} {
			if !bytes.Equal(readFile(t, filepath.Join(got, name)), readFile(t, filepath.Join(want, name))) {
				t.Errorf("Change Dump %d: the resumed run's %s differs from an uninterrupted run's", k, name)
			}
		}
	}
}
