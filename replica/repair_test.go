package replica_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
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
	t.Parallel()
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
	// Reported: those bytes, and the documents the repair read (the dump
	// document, the detached manifest).
	docs := repairDocs(t, p)
	if served > fi.Size()/100 || res.Repair.Fetched != served+docs {
		t.Errorf("served %d bytes of a %d-byte package, and %d of documents (reported %d) to repair 100,000", served, fi.Size(), docs, res.Repair.Fetched)
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
	t.Parallel()
	s := newSource(t, files(6, 300))
	s.publishResources()
	dst := t.TempDir()
	syncRun(t, s.srv.URL+"/", dst, replica.Options{})
	flipByte(t, filepath.Join(dst, "d1", "f001.txt"), false)
	res, fs, _ := syncRun(t, "", dst, replica.Options{})
	list, _ := os.Stat(filepath.Join(s.out, "resourcelist.xml"))
	if res.Problems() != 0 || res.Repair == nil || res.Repair.Repaired != 1 || res.Repair.Fetched != 300+list.Size() {
		t.Fatalf("%+v repair %+v\n%s", res, res.Repair, problems(fs))
	}
	sameTree(t, dst, s.files)
}

// TestRepairDryRunAndUnrepaired: a dry run says what it would repair and
// fetches nothing; a damaged file whose version no document carries any
// more (the Source changed it and published no change) is an error that
// names it, and the file is left as it is.
func TestRepairDryRunAndUnrepaired(t *testing.T) {
	t.Parallel()
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

// TestAuditRepairsByPiece: --audit that finds 4 flipped bytes in a 200 MB
// file (24 MB with -short) fetches about the piece they are in, not the
// whole bitstream: the manifest carries its piece hashes, and the repair
// reads the file piece by piece, fetching from inside the package only
// the piece whose hash differs; fewer than 2 MiB are served, counted at
// the server, and the file is whole again.
func TestAuditRepairsByPiece(t *testing.T) {
	t.Parallel()
	size := 200 << 20
	if testing.Short() {
		size = 24 << 20
	}
	p := newPacked(t, files(4, 100))
	big := make([]byte, size)
	rand.NewChaCha8([32]byte{1}).Read(big)
	write(t, filepath.Join(p.src, "big.bin"), big)
	p.pack(false, pack.Options{})
	dst := t.TempDir()
	if res, fs, _ := syncRun(t, p.capabilities(), dst, replica.Options{}); res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	path := filepath.Join(dst, "big.bin")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := int64(size/2 + 12345)
	flipped := []byte{big[at] ^ 1, big[at+1] ^ 2, big[at+2] ^ 4, big[at+3] ^ 8}
	f.WriteAt(flipped, at)
	f.Close()
	os.Chtimes(path, fi.ModTime(), fi.ModTime())

	before := p.zipBytes.Load()
	res, fs, _ := syncRun(t, "", dst, replica.Options{Audit: true})
	served := p.zipBytes.Load() - before
	if res.Problems() != 0 || res.Repair == nil || res.Repair.Damaged != 1 || res.Repair.Repaired != 1 {
		t.Fatalf("%+v repair %+v\n%s", res, res.Repair, problems(fs))
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("big.bin not repaired (%v)", err)
	}
	if docs := repairDocs(t, p); served >= 2<<20 || res.Repair.Fetched != served+docs {
		t.Errorf("served %d bytes, and %d of documents (reported %d), to repair 4 bytes of %d", served, docs, res.Repair.Fetched, size)
	}
	t.Logf("repaired 4 flipped bytes of %d: %d bytes served", size, served)
}

// TestRepairFilesByPiece: what rsdump audit --repair calls, RepairFiles
// of one record of the written log, takes the same path as sync's repair:
// 4 flipped bytes of a stored 24 MiB bitstream whose manifest carries
// piece hashes are restored by fetching about one 1 MiB piece, counted at
// the server, not the whole bitstream.
func TestRepairFilesByPiece(t *testing.T) {
	const size = 24 << 20
	p := newPacked(t, files(4, 100))
	big := make([]byte, size)
	rand.NewChaCha8([32]byte{2}).Read(big)
	write(t, filepath.Join(p.src, "big.bin"), big)
	p.pack(false, pack.Options{})
	dst := t.TempDir()
	if res, fs, _ := syncRun(t, p.capabilities(), dst, replica.Options{}); res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	path := filepath.Join(dst, "big.bin")
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{big[size/3] ^ 1, big[size/3+1] ^ 2, big[size/3+2] ^ 4, big[size/3+3] ^ 8}, size/3)
	f.Close()

	d, err := deststate.Open(dst, deststate.Options{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	recs, err := d.Lookup(map[string]bool{"big.bin": true})
	if err != nil || recs["big.bin"].Path != "big.bin" {
		t.Fatalf("the written log's record of big.bin: %v %+v", err, recs)
	}
	before := p.zipBytes.Load()
	res, err := replica.RepairFiles(t.Context(), d, []deststate.Record{recs["big.bin"]}, replica.Options{})
	served := p.zipBytes.Load() - before
	if err != nil || res.Repaired != 1 {
		t.Fatalf("RepairFiles: %v %+v", err, res)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("big.bin not repaired (%v)", err)
	}
	if served >= 2<<20 {
		t.Errorf("served %d package bytes to repair 4 bytes of %d", served, size)
	}
	t.Logf("repaired 4 flipped bytes of %d: %d package bytes served", size, served)
}

// TestRepairDeflatedTakesWholeBitstream: a large bitstream that was
// deflated has piece hashes too, but its bytes cannot be read from the
// middle of the compressed stream: its repair reads it whole, and is
// right.
func TestRepairDeflatedTakesWholeBitstream(t *testing.T) {
	t.Parallel()
	p := newPacked(t, files(2, 100))
	text := []byte(strings.Repeat("a line of text that deflates well\n", 200000)) // 6.8 MB
	write(t, filepath.Join(p.src, "big.txt"), text)
	p.pack(false, pack.Options{})
	dst := t.TempDir()
	syncRun(t, p.capabilities(), dst, replica.Options{})
	flipByte(t, filepath.Join(dst, "big.txt"), true)
	before := p.zipBytes.Load()
	res, fs, _ := syncRun(t, "", dst, replica.Options{Audit: true})
	if res.Problems() != 0 || res.Repair.Repaired != 1 {
		t.Fatalf("%+v repair %+v\n%s", res, res.Repair, problems(fs))
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "big.txt")); !bytes.Equal(got, text) {
		t.Fatal("big.txt not repaired")
	}
	t.Logf("repaired a deflated bitstream of %d bytes: %d package bytes served", len(text), p.zipBytes.Load()-before)
}

// repairDocs is the size of the documents a repair from p's one package
// reads beside the package's ranges: the dump document and the detached
// manifest. A repair reports every byte it fetched, these included.
func repairDocs(t *testing.T, p *packed) int64 {
	t.Helper()
	docs := int64(0)
	for _, name := range []string{layout.DumpName, "resourcedump-00001.manifest.xml"} {
		fi, err := os.Stat(filepath.Join(p.out, name))
		if err != nil {
			t.Fatal(err)
		}
		docs += fi.Size()
	}
	return docs
}
