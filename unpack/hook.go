package unpack

// Points in the commit of a package where a test may stop the process, to
// check that a crash there loses nothing (see kill_test.go).
const (
	HookSurveyed  = "surveyed"  // every manifest of a Resource Dump surveyed, no package opened
	HookStaged    = "staged"    // every bitstream staged, none durable yet
	HookDurable   = "durable"   // staged files durable, none renamed
	HookCommit    = "commit"    // before a rename; n is the renames done
	HookCommitted = "committed" // every rename done, not yet durable
	HookSynced    = "synced"    // renames durable, written log not appended
)

// hook is called at each of those points; only tests set it.
var hook = func(point string, n int) {}
