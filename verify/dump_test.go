package verify_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/verify"
)

func TestPackedExample(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, exampleFiles(t)), pack.Options{Hashes: []string{digest.MD5, digest.SHA256}})
	for _, target := range []string{out, filepath.Join(out, layout.DumpName), filepath.Join(out, "resourcedump-00001.zip")} {
		sum, fs := run(t, verify.Options{}, target)
		if sum.Problems() != 0 || sum.Warnings != 0 {
			t.Errorf("%s: %+v\n%s", target, sum, dump(fs))
		}
		if sum.Bitstreams != 9 || sum.Packages != 1 {
			t.Errorf("%s: %d bitstreams in %d packages, want 9 in 1", target, sum.Bitstreams, sum.Packages)
		}
	}
	_, fs := run(t, verify.Options{}, out)
	if f, ok := find(fs, finding.OK, finding.CheckPackage); !ok || !strings.Contains(f.Actual, "sha-256:") {
		t.Errorf("no OK finding for the package hash: %+v", f)
	}
}

// damagedDump packs BaseFiles and returns the output directory and the
// package path.
func damagedDump(t *testing.T) (string, string) {
	files := map[string]string{}
	for _, f := range verifytest.BaseFiles {
		files[f.Rel] = f.Data
	}
	out := packDir(t, tree(t, files), pack.Options{Compress: pack.Store})
	return out, filepath.Join(out, "resourcedump-00001.zip")
}

func TestDumpPackageFlipped(t *testing.T) {
	t.Parallel()
	out, zp := damagedDump(t)
	z, _ := os.ReadFile(zp)
	os.WriteFile(zp, verifytest.Flip(z, verifytest.MustIndex(t, z, []byte("bravo"))), 0o644)
	_, fs := run(t, verify.Options{}, out)
	got := strings.Join(errorsOf(fs), ",")
	want := "crc resources/b.txt,hash ,hash resources/b.txt"
	if got != want {
		t.Errorf("errors %q, want %q\n%s", got, want, dump(fs))
	}
}

func TestDumpPackageMissingAndTruncated(t *testing.T) {
	t.Parallel()
	out, zp := damagedDump(t)
	os.Rename(zp, zp+".gone")
	_, fs := run(t, verify.Options{}, filepath.Join(out, layout.DumpName))
	if f, ok := find(fs, finding.Error, finding.CheckMissing); !ok || !strings.Contains(f.Msg, "is missing") {
		t.Errorf("missing package not reported:\n%s", dump(fs))
	}
	z, _ := os.ReadFile(zp + ".gone")
	os.WriteFile(zp, z[:len(z)-100], 0o644)
	_, fs = run(t, verify.Options{}, filepath.Join(out, layout.DumpName))
	got := strings.Join(errorsOf(fs), ",")
	if got != "hash ,length ,zip " {
		t.Errorf("truncated package: errors %q\n%s", got, dump(fs))
	}
}

func TestDetachedManifestDiffers(t *testing.T) {
	t.Parallel()
	out, _ := damagedDump(t)
	mp := filepath.Join(out, "resourcedump-00001.manifest.xml")
	m, _ := os.ReadFile(mp)
	os.WriteFile(mp, []byte(strings.Replace(string(m), "length=\"240\"", "length=\"241\"", 1)), 0o644)
	_, fs := run(t, verify.Options{}, out)
	if f, ok := find(fs, finding.Error, finding.CheckDetached); !ok || !strings.Contains(f.Msg, "entry 1") {
		t.Errorf("detached manifest difference not reported as an error:\n%s", dump(fs))
	}
	os.WriteFile(mp, []byte(strings.Replace(string(m), "/resources/a.txt", "/srv/a.txt", 1)), 0o644)
	_, fs = run(t, verify.Options{}, out)
	if _, ok := find(fs, finding.Warning, finding.CheckDetached); !ok || len(errorsOf(fs)) != 0 {
		t.Errorf("a path-only difference should be a warning:\n%s", dump(fs))
	}
}

// TestResyncPeer verifies the dump resync wrote: accepted, with warnings
// for what resync does differently.
func TestResyncPeer(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "shared", "peers", "resync", "rd-cli")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("resync peer dump not found at %s: ../shared is missing", dir)
	}
	sum, fs := run(t, verify.Options{}, dir)
	if sum.Problems() != 0 {
		t.Errorf("resync dump has problems: %+v\n%s", sum, dump(fs))
	}
	if sum.Bitstreams != 8 || sum.Packages != 1 {
		t.Errorf("%d bitstreams in %d packages, want 8 in 1", sum.Bitstreams, sum.Packages)
	}
	for _, check := range []string{finding.CheckTime, finding.CheckDetached, finding.CheckManifest} {
		if _, ok := find(fs, finding.Warning, check); !ok {
			t.Errorf("no %s warning for the resync dump:\n%s", check, dump(fs))
		}
	}
}

// TestChangeManifestOrderByDatetime: a Change Dump Manifest is in
// chronological order by the time of each change, its datetime, not by
// the resources' own times (lastmod).
func TestChangeManifestOrderByDatetime(t *testing.T) {
	t.Parallel()
	change := func(rel string, lastmod, datetime time.Duration) verifytest.File {
		return verifytest.File{Rel: rel, Data: rel, Change: "updated", Lastmod: fixedTime.Add(lastmod), Datetime: fixedTime.Add(datetime)}
	}
	for _, c := range []struct {
		name    string
		changes []verifytest.File
		flagged bool
	}{
		{"old files changed in order", []verifytest.File{change("a", 2*time.Hour, time.Hour), change("b", -time.Hour, 2*time.Hour)}, false},
		{"changes out of order", []verifytest.File{change("a", time.Hour, 2*time.Hour), change("b", 2*time.Hour, time.Hour)}, true},
	} {
		z, _ := verifytest.ChangeZip(t, verifytest.ChangePackage{From: fixedTime, Until: fixedTime.Add(3 * time.Hour), Changes: c.changes})
		_, fs := run(t, verify.Options{}, writeFile(t, "c.zip", z))
		if _, flagged := find(fs, finding.Error, finding.CheckOrder); flagged != c.flagged {
			t.Errorf("%s: order reported %v, want %v\n%s", c.name, flagged, c.flagged, dump(fs))
		}
	}
}
