package main

import (
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/rsdump/rsdump/resourcesync"
)

// Local paths given on the command line are made absolute as they are
// parsed, so that every message the run prints names a file by a path
// that means the same thing wherever it is read (a log, a cron mail).
// URLs, s3:// locations, "-" and "" are left as they are.

// absLocal is p absolute, when it is a local path.
func absLocal(p string) string {
	if p == "" || p == "-" || resourcesync.IsURL(p) {
		return p
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// absArgs is absLocal of each positional argument.
func absArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = absLocal(a)
	}
	return out
}

// pathValue is a string flag that holds a path made absolute.
type pathValue struct{ p *string }

func (v pathValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}
func (v pathValue) Set(s string) error { *v.p = absLocal(s); return nil }
func (v pathValue) Type() string       { return "string" }

// pathVarP defines a flag whose local path is made absolute.
func pathVarP(fs *pflag.FlagSet, p *string, name, short, value, usage string) {
	*p = value
	fs.VarP(pathValue{p}, name, short, usage)
}
