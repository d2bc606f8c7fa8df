package replica

import (
	"context"
	"testing"

	"github.com/rsdump/rsdump/unpack"
)

// SetApplyList has fn apply the lists a Tracked Resource Set's sync
// writes, instead of unpack.ApplyList, until t ends.
func SetApplyList(t testing.TB, fn func(ctx context.Context, doc, dir string, o unpack.Options) (*unpack.Result, error)) {
	old := applyList
	applyList = fn
	t.Cleanup(func() { applyList = old })
}

// SetTRSSortRuns has the TRS consumer's sorts hold n records a run (the
// Source's entries too), until t ends: small runs spill and merge.
func SetTRSSortRuns(t testing.TB, n int) {
	old, oldEntries := trsSortRun, trsEntryRun
	trsSortRun, trsEntryRun = n, n
	t.Cleanup(func() { trsSortRun, trsEntryRun = old, oldEntries })
}
