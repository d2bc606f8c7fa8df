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
