package unpack_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
	"github.com/rsdump/rsdump/verify/verifytest"
)

// atSurvey calls f with the survey's spools in dst once the survey ends,
// before any package is opened.
func atSurvey(t *testing.T, dst string, f func(spools []string)) {
	unpack.SetHook(func(point string, _ int) {
		if point == unpack.HookSurveyed {
			spools, _ := filepath.Glob(filepath.Join(dst, verify.StateDir, "tmp", ".rsdump-manifest-*.tmp"))
			f(spools)
		}
	})
	t.Cleanup(func() { unpack.SetHook(func(string, int) {}) })
}

// checkScratchEmpty fails the test if the run left anything in dst's
// scratch directory.
func checkScratchEmpty(t *testing.T, dst string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(dst, verify.StateDir, "tmp", "*")); len(left) != 0 {
		t.Errorf("left in the scratch directory: %v", left)
	}
}

// spoolTest packs 12 files into 3 packages and unpacks them into a new
// directory, letting meddle change the survey's spools of their entries
// before any package is opened.
func spoolTest(t *testing.T, meddle func(spools []string)) (src, dst string, res *unpack.Result, fs []verify.Finding) {
	t.Helper()
	src = tree(t, manyFiles(12, 10))
	out := packDir(t, src, pack.Options{MaxEntries: 4})
	dst = t.TempDir()
	seen := -1
	atSurvey(t, dst, func(spools []string) {
		seen = len(spools)
		meddle(spools)
	})
	res, fs = run(t, filepath.Join(out, pack.DumpName), dst, unpack.Options{})
	unpack.SetHook(func(string, int) {}) // a second run of the test's is left alone
	if seen != 3 {
		t.Fatalf("%d spools after the survey of 3 packages", seen)
	}
	checkScratchEmpty(t, dst)
	return src, dst, res, fs
}

func TestSurveySpoolsRead(t *testing.T) {
	src, dst, res, fs := spoolTest(t, func([]string) {})
	if res.Problems() != 0 || res.Written != 12 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))
}

// TestSurveySpoolsOfOtherBytes swaps the spools: no package takes
// entries decoded from another's manifest; each decodes its own.
func TestSurveySpoolsOfOtherBytes(t *testing.T) {
	src, dst, res, fs := spoolTest(t, func(s []string) {
		os.Rename(s[0], s[0]+".x")
		os.Rename(s[1], s[0])
		os.Rename(s[0]+".x", s[1])
	})
	if res.Problems() != 0 || res.Written != 12 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))
}

// TestSurveySpoolsDamaged changes a byte of an entry in every spool: the
// packages are refused, naming the spool, nothing of theirs is written,
// and a second run restores the tree.
func TestSurveySpoolsDamaged(t *testing.T) {
	src, dst, res, fs := spoolTest(t, func(spools []string) {
		for _, s := range spools {
			b, _ := os.ReadFile(s)
			b[3] ^= 1 // in the first entry's <loc>
			os.WriteFile(s, b, 0o600)
		}
	})
	if res.Written != 0 || res.Errors == 0 {
		t.Fatalf("damaged spools: %+v\n%s", res, dump(fs))
	}
	named := 0
	for _, f := range fs {
		if f.Check == verify.CheckManifest && strings.Contains(f.Msg, "spool damaged") && strings.Contains(f.Msg, ".rsdump-manifest-") {
			named++
		}
	}
	if named != 3 {
		t.Errorf("%d of 3 packages refused for their damaged spool\n%s", named, dump(fs))
	}
	if got := readTree(t, dst); len(got) != 0 {
		t.Errorf("written from packages refused: %v", got)
	}
	res, fs = run(t, filepath.Join(filepath.Dir(fs[0].Source), pack.DumpName), dst, unpack.Options{})
	if res.Problems() != 0 || res.Written != 12 {
		t.Fatalf("second run: %+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))
}

// TestSurveySpoolBudget: once the spools take the budget, the packages
// surveyed after are not spooled, and are decoded again when staged.
func TestSurveySpoolBudget(t *testing.T) {
	unpack.SetSpoolBudget(t, 1) // the first spool spends it
	src := tree(t, manyFiles(12, 10))
	out := packDir(t, src, pack.Options{MaxEntries: 4})
	dst := t.TempDir()
	spools := -1
	atSurvey(t, dst, func(s []string) { spools = len(s) })
	res, fs := run(t, filepath.Join(out, pack.DumpName), dst, unpack.Options{Jobs: 1})
	if spools != 1 {
		t.Errorf("%d spools for 3 packages and a budget the first spends", spools)
	}
	if res.Problems() != 0 || res.Written != 12 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))
}

// TestSurveySpoolsRemote: the survey of a remote dump reads each
// package's detached manifest, and its spool serves the package once
// downloaded (the detached manifest holds the same bytes).
func TestSurveySpoolsRemote(t *testing.T) {
	out := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	t.Cleanup(srv.Close)
	src := tree(t, manyFiles(12, 10))
	o := pack.Options{BaseURL: verifytest.BaseURL, DumpURL: srv.URL + "/", At: fixedTime, MaxEntries: 4}
	if _, err := pack.Pack(t.Context(), src, out, o); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	spools := -1
	atSurvey(t, dst, func(s []string) { spools = len(s) })
	res, fs := run(t, srv.URL+"/"+pack.DumpName, dst, unpack.Options{Client: client})
	if spools != 3 {
		t.Errorf("%d spools after the survey of 3 remote packages", spools)
	}
	if res.Problems() != 0 || res.Written != 12 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))
	checkScratchEmpty(t, dst)
}
