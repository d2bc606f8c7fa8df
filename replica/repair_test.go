package replica_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/unpack"
)

// randomFiles are n files of size random (incompressible) bytes.
func randomFiles(n, size int) map[string]string {
	out := map[string]string{}
	r := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	for i := range n {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		out[fmt.Sprintf("d%d/f%04d.bin", i%7, i)] = string(b)
	}
	return out
}

// flipByte damages a file of the tree without changing its length, and
// gives it back its mtime when keepTime: only a hash shows it.
func flipByte(t *testing.T, path string, keepTime bool) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 0xff
	os.WriteFile(path, b, 0o644)
	if keepTime {
		os.Chtimes(path, fi.ModTime(), fi.ModTime())
	}
}

// TestSyncRepairs: sync checks the tree against what it wrote and
// restores a damaged file, then a missing one, fetching their bytes from
// inside their package by ranges: under 1% of the package for one file.
func TestSyncRepairs(t *testing.T) {
	p := newPacked(t, randomFiles(200, 100_000))
	p.pack(false, pack.Options{Compress: pack.Store})
	dst := t.TempDir()
	syncRun(t, p.capabilities(), dst, replica.Options{})
	zips, _ := filepath.Glob(filepath.Join(p.out, "resourcedump-*.zip"))
	fi, _ := os.Stat(zips[0])
	if len(zips) != 1 || fi.Size() < 20_000_000 {
		t.Fatalf("want one package of 20 MB: %v", zips)
	}
	flipByte(t, filepath.Join(dst, "d3", "f0003.bin"), false)
	before := p.zipBytes.Load()
	res, fs, _ := syncRun(t, "", dst, replica.Options{})
	served := p.zipBytes.Load() - before
	if res.Problems() != 0 || res.Repair == nil || res.Repair.Damaged != 1 || res.Repair.Repaired != 1 {
		t.Fatalf("%+v repair %+v\n%s", res, res.Repair, problems(fs))
	}
	sameTree(t, dst, verifytest.ReadTree(t, p.src))
	if served > fi.Size()/100 || served != res.Repair.Fetched {
		t.Errorf("served %d bytes of a %d-byte package (reported %d) to repair 100,000", served, fi.Size(), res.Repair.Fetched)
	}
	t.Logf("repaired a file of 100,000 bytes: %d bytes of the %d-byte package served", served, fi.Size())

	os.Remove(filepath.Join(dst, "d5", "f0012.bin"))
	if res, fs, _ := syncRun(t, "", dst, replica.Options{}); res.Problems() != 0 || res.Repair.Repaired != 1 {
		t.Fatalf("missing file: %+v repair %+v\n%s", res, res.Repair, problems(fs))
	}
	sameTree(t, dst, verifytest.ReadTree(t, p.src))

	// A damaged file of the same length and mtime shows only in its hash:
	// --audit reads every file.
	flipByte(t, filepath.Join(dst, "d1", "f0008.bin"), true)
	if res, _, _ := syncRun(t, "", dst, replica.Options{}); res.Repair.Damaged != 0 {
		t.Errorf("the cheap check read the file: %+v", res.Repair)
	}
	res, fs, _ = syncRun(t, "", dst, replica.Options{Audit: true})
	if res.Problems() != 0 || res.Repair.Repaired != 1 || res.Audit == nil || res.Audit.Errors != 0 {
		t.Fatalf("--audit: %+v repair %+v audit %+v\n%s", res, res.Repair, res.Audit, problems(fs))
	}
	sameTree(t, dst, verifytest.ReadTree(t, p.src))
}

// TestRepairFromResourceURI: a Source with no dump: a damaged file is
// fetched again from its URI, as the Resource List names it.
func TestRepairFromResourceURI(t *testing.T) {
	s := newSource(t, files(6, 300))
	s.publishResources()
	dst := t.TempDir()
	syncRun(t, s.srv.URL+"/", dst, replica.Options{})
	flipByte(t, filepath.Join(dst, "d1", "f001.txt"), false)
	res, fs, _ := syncRun(t, "", dst, replica.Options{})
	if res.Problems() != 0 || res.Repair == nil || res.Repair.Repaired != 1 || res.Repair.Fetched != 300 {
		t.Fatalf("%+v repair %+v\n%s", res, res.Repair, problems(fs))
	}
	sameTree(t, dst, s.files)
}

// TestRepairDryRunAndUnrepaired: a dry run says what it would repair and
// fetches nothing; a damaged file whose version no document carries any
// more (the Source changed it and published no change) is an error that
// names it, and the file is left as it is.
func TestRepairDryRunAndUnrepaired(t *testing.T) {
	p := newPacked(t, files(8, 400))
	p.pack(false, pack.Options{})
	dst := t.TempDir()
	syncRun(t, p.capabilities(), dst, replica.Options{})
	flipByte(t, filepath.Join(dst, "d0", "f000.txt"), false)
	before := p.zipBytes.Load()
	res, fs, _ := syncRun(t, "", dst, replica.Options{DryRun: true})
	if res.Repair == nil || res.Repair.Damaged != 1 || res.Repair.Repaired != 1 || p.zipBytes.Load() != before {
		t.Fatalf("dry run: %+v repair %+v, %d package bytes served\n%s", res, res.Repair, p.zipBytes.Load()-before, problems(fs))
	}
	// The Source repacks a changed d0/f000.txt over its dump: no package
	// or list carries the version rsdump wrote.
	p.write(map[string]string{"d0/f000.txt": "another version"})
	p.runs = 0
	p.pack(false, pack.Options{})
	res, fs, _ = syncRun(t, "", dst, replica.Options{})
	f, ok := findingAt(fs, finding.Error, unpack.CheckDamaged, "d0/f000.txt")
	if !ok || res.Repair.Repaired != 0 {
		t.Fatalf("unrepairable file not reported: %+v repair %+v\n%s", res, res.Repair, problems(fs))
	}
	t.Logf("%s", f.Msg)
}

func findingAt(fs []finding.Finding, sev finding.Severity, check, path string) (finding.Finding, bool) {
	for _, f := range fs {
		if f.Severity == sev && f.Code == check && f.Path == path {
			return f, true
		}
	}
	return finding.Finding{}, false
}
