package pack

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/racetest"
	"github.com/rsdump/rsdump/internal/ziptest"
	"github.com/rsdump/rsdump/verify"
)

// TestPackOver4GiB packs a sparse 4 GiB + 1 MiB file beside a small one and
// checks the package with archive/zip and with unzip, bsdtar, 7z and
// Python's zipfile.
func TestPackOver4GiB(t *testing.T) {
	t.Parallel()
	racetest.SkipLarge(t, "a 4 GiB package")
	src := tree(t, map[string]string{"small.txt": "small"})
	big := filepath.Join(src, "big.bin")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(4<<30 + 1<<20) // sparse: no 4 GiB of disk needed to read it
	f.Close()
	os.Chtimes(big, fixedTime, fixedTime)
	o := testOptions()
	o.Hashes = []string{"sha-256"}
	o.Compress = Store
	res, out := mustPack(t, src, o)
	path := filepath.Join(out, res.Packages[0].Name)
	checkPackage(t, path)
	ziptest.CheckTools(t, path)

	// big.bin fills the package alone; verify finds manifest.xml's local
	// header, past 4 GiB, from the ZIP64 field of its central record.
	var problems []finding.Finding
	sum, err := verify.Verify(context.Background(), []string{path}, verify.Options{Events: finding.OnFindings(func(f finding.Finding) {
		if f.Severity != finding.OK {
			problems = append(problems, f)
		}
	})})
	if err != nil || sum.OK != 1 || len(problems) > 0 {
		t.Errorf("verify: %d verified, %v, %v", sum.OK, err, problems)
	}
}
