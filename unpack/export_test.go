package unpack

// SetHook makes f run at each commit point (Hook*); tests only.
func SetHook(f func(point string, n int)) { hook = f }

// SetSpoolBudget sets the survey's spool budget until the test ends.
func SetSpoolBudget(t interface{ Cleanup(func()) }, n int64) {
	old := spoolBudget
	spoolBudget = n
	t.Cleanup(func() { spoolBudget = old })
}

// SetListBatch sets ApplyList's batch size until the test ends.
func SetListBatch(t interface{ Cleanup(func()) }, n int) {
	old := listBatch
	listBatch = n
	t.Cleanup(func() { listBatch = old })
}

// SetListSortRun sets the records each of ApplyList's sorts holds in
// memory until the test ends: small, the sorts spill to disk.
func SetListSortRun(t interface{ Cleanup(func()) }, n int) {
	old := listSortRun
	listSortRun = n
	t.Cleanup(func() { listSortRun = old })
}

// SetFsyncEach makes staged files synced each, on the syncer, as where
// there is no syncfs(2), and starts an early writeback every n files
// staged, until the test ends.
func SetFsyncEach(t interface{ Cleanup(func()) }, n int64) {
	oldWorks, oldEvery := syncfsWorks, flushEvery
	syncfsWorks, flushEvery = false, n
	t.Cleanup(func() { syncfsWorks, flushEvery = oldWorks, oldEvery })
}
