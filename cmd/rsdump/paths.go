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

// parseLocations parses each SOURCE or TARGET the user gave, once
// (resourcesync.ParseLocation), for the command to pass down typed: one
// that is no http(s) or s3 URL and no plain path ("htp://x", "file:///x",
// "host:8080/x") is a usage error naming it; a path is made absolute.
func parseLocations(what string, args []string) ([]resourcesync.Location, error) {
	locs := make([]resourcesync.Location, len(args))
	for i, a := range args {
		l, err := resourcesync.ParseLocation(a)
		if err != nil {
			return nil, usagef("%s %v", what, err)
		}
		if l.Kind() == resourcesync.LocPath {
			if abs, err := filepath.Abs(a); err == nil {
				l, _ = resourcesync.ParseLocation(abs)
			}
		}
		locs[i] = l
	}
	return locs, nil
}

// locStrings is the string of each Location, for a library that takes
// strings it reads as URLs or paths, as a Location says.
func locStrings(locs []resourcesync.Location) []string {
	out := make([]string, len(locs))
	for i, l := range locs {
		out[i] = l.String()
	}
	return out
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
