package verify_test

import (
	"slices"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/verify"
)

func TestIntactPackage(t *testing.T) {
	t.Parallel()
	p := writeFile(t, "p.zip", verifytest.Intact(t))
	sum, fs := run(t, verify.Options{}, p)
	if sum.Problems() != 0 || sum.Warnings != 0 {
		t.Errorf("intact package: %+v\n%s", sum, dump(fs))
	}
	if sum.Bitstreams != 3 || sum.OK != 3 {
		t.Errorf("bitstreams %d, ok %d; want 3, 3", sum.Bitstreams, sum.OK)
	}
}

// TestBrokenCorpus checks that every damaged package gives exactly the
// error findings expected, no more and no fewer.
func TestBrokenCorpus(t *testing.T) {
	t.Parallel()
	for _, c := range verifytest.Corpus(t) {
		t.Run(c.Name, func(t *testing.T) {
			p := writeFile(t, "p.zip", c.Zip)
			sum, fs := run(t, verify.Options{Limits: pkgread.Limits{MaxRatio: c.MaxRatio}}, p)
			got, want := errorsOf(fs), wantsOf(c.Errors)
			if !slices.Equal(got, want) {
				t.Errorf("errors:\n got  %q\n want %q\nfindings:\n%s", got, want, dump(fs))
			}
			if sum.Problems() == 0 {
				t.Errorf("no problem counted")
			}
			if ok := sum.OK; ok != len(c.Committed) {
				t.Errorf("%d bitstreams verified, want %d (%v)", ok, len(c.Committed), c.Committed)
			}
		})
	}
}
