// Package layers holds the module's layering, which its test checks: a
// package may import packages of its own layer or of the layers below,
// never one above. The layers read from the bottom up: the foundations
// (hashes, path rules, atomic files, counts in words), the ways bytes
// move (HTTP, the pack sink, the claims workers share through it), the formats and the Destination's state,
// the readers and writers of whole packages and dumps, the bridge that
// fetches packages for the readers, the Destination's restore, sync,
// follow, and the command line on top.
package layers

// Layers lists the module's packages (paths relative to the module),
// lowest layer first. A package that is not listed fails the test: a new
// package is given its place here.
var Layers = [][]string{
	{"finding", "version", "s3", "internal/atomic", "internal/appendlog", "internal/digest", "internal/extsort", "internal/safepath",
		"internal/zipw", "internal/ziprange", "internal/entryspool", "internal/s3x", "metalink/httpheader",
		"internal/layers", "sign", "internal/pause", "internal/opt", "internal/iocount",
		"internal/flock", "internal/unixnano"},
	{"internal/httpc", "internal/sink", "internal/claim"},
	{"resourcesync", "metalink", "layout", "deststate"},
	{"pkgread", "pack", "transfer", "verify", "notify", "serve", "trs", "websub"},
	{"transfer/pkgfetch"},
	{"unpack"},
	{"replica"},
	{"follow", "audit"},
	{"cmd/rsdump"},
}

// Helpers are the packages that serve tests and benchmarks: they may
// import any package, and none but a test or benchmark imports them.
var Helpers = []string{
	"internal/httpc/httpctest", "internal/mirrortest", "internal/packtest", "internal/s3test",
	"internal/racetest", "internal/sharedtest", "internal/verifytest", "internal/webtest", "internal/ziptest", "sign/signtest",
}
