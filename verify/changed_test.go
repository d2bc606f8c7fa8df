package verify_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/verify"
)

func TestVerifyRefusesPackageChangedDuringRun(t *testing.T) {
	t.Parallel()
	good, evil := verifytest.TailSwap(t)
	src := t.TempDir()
	doc := verifytest.ResourceDump(t, src, good)
	zipPath := filepath.Join(src, "resourcedump-00001.zip")
	if err := os.WriteFile(zipPath, evil, 0o644); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	opts := verify.Options{Jobs: 1, Events: func(e finding.Event) {
		if _, ok := e.(finding.Progress); ok {
			once.Do(func() { os.WriteFile(zipPath, good, 0o644) }) // in place: the open file sees it
		}
	}}
	sum, fs := run(t, opts, doc)
	// The package is small enough to be read in one read ahead, before
	// it changes: what verify used is then the evil package throughout,
	// and its hash is not the document's. A larger package read in parts
	// finds the change itself (TestPassHasher covers ErrChanged).
	f, changed := find(fs, finding.Error, finding.CheckRead)
	_, hashBad := find(fs, finding.Error, finding.CheckHash)
	if !(changed && strings.Contains(f.Msg, "changed")) && !hashBad {
		t.Errorf("no finding that the package changed or differs from the document:\n%s", dump(fs))
	}
	if sum.Problems() == 0 {
		t.Errorf("a package that changed during the run verified: %+v", sum)
	}
}
