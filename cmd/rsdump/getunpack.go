package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/transfer"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
)

// getUnpacker hands each package to unpack as soon as it and every
// package listed before it are verified: Change Dump packages must be
// applied in order, and Resource Dump packages lose nothing by it. Like
// rsdump unpack, it stops at a Change Dump package that fails to unpack:
// each package applied after it would move the state's until past
// changes that were never applied, and no later run would apply them.
type getUnpacker struct {
	dir     string
	opts    unpack.Options
	order   map[string]int // file name → position among the sources' files
	names   []string       // the sources' files, in order
	mu      sync.Mutex
	done    map[int]*transfer.Result // verified, not yet unpacked
	next    int
	stopped string // the Change Dump package that failed, holding back the rest
	msg     func(format string, args ...any)
}

// unpackOptions checks the --unpack flags before anything is fetched.
func unpackOptions(f getFlags) (unpack.Options, error) {
	if f.unpack == "" {
		return unpack.Options{}, nil
	}
	layout, err := verify.ParseLayout(f.layout)
	if err != nil {
		return unpack.Options{}, usageError{err}
	}
	if layout == verify.ByURI && f.baseURL == "" {
		return unpack.Options{}, usagef("--unpack needs --base-url URL (the prefix of the bitstream URIs), or --layout path")
	}
	m, err := verify.NewMapper(layout, f.baseURL)
	if err != nil {
		return unpack.Options{}, usageError{err}
	}
	return unpack.Options{Mapper: m}, nil
}

func newGetUnpacker(dir string, o unpack.Options, files []transfer.File, msg func(string, ...any)) *getUnpacker {
	u := &getUnpacker{dir: dir, opts: o, order: map[string]int{}, done: map[int]*transfer.Result{}, msg: msg}
	for i, f := range files {
		u.order[f.Name] = i
		u.names = append(u.names, f.Name)
	}
	return u
}

// completed is transfer.Options.Completed. It unpacks the longest run of
// finished packages at the head of the list, holding the lock so that
// packages go to unpack one at a time, until a Change Dump package fails.
func (u *getUnpacker) completed(ctx context.Context, r *transfer.Result) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.done[u.order[r.Name]] = r
	var mine error
	for u.stopped == "" {
		next, ok := u.done[u.next]
		if !ok {
			break
		}
		delete(u.done, u.next)
		u.next++
		err := u.unpack(ctx, next)
		if err != nil && !isResourcePackage(next.Path) {
			u.stopped = next.Name
		}
		if next == r {
			mine = err
		} else if err != nil {
			u.msg("rsdump: %s: %v", next.Name, err)
		}
	}
	return mine
}

// isResourcePackage reports whether the package at path has a Resource
// Dump Manifest, whose failure holds nothing back: such a package does not
// move the state. A package that cannot be read might be a Change Dump
// package, so it counts as one.
func isResourcePackage(path string) bool {
	ra, size, closeFn, err := verify.OpenLocation(context.Background(), nil, path)
	if err != nil {
		return false
	}
	defer closeFn()
	pkg, err := verify.OpenPackage(ra, size, path, "", verify.Limits{}, verify.NewReporter(nil))
	return err == nil && pkg.Header.MD.Capability == resourcesync.CapResourceDumpManifest
}

func (u *getUnpacker) unpack(ctx context.Context, r *transfer.Result) error {
	res, err := unpack.Unpack(ctx, r.Path, u.dir, u.opts)
	if err != nil {
		return fmt.Errorf("unpacking %s: %w", r.Path, err)
	}
	if res.Refused > 0 || res.Errors > 0 {
		return fmt.Errorf("unpacking %s: %d bitstreams refused, %d errors (run rsdump unpack for the report)", r.Path, res.Refused, res.Errors)
	}
	u.msg("rsdump: %s: unpacked %d bitstreams into %s (%d already present)", r.Name, res.Written, u.dir, res.Present)
	return nil
}

// leftovers names the packages held back because one before them failed
// to download or, being a Change Dump package, to unpack.
func (u *getUnpacker) leftovers() error {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.done) == 0 {
		return nil
	}
	held := slices.Sorted(maps.Keys(u.done))
	names := make([]string, len(held))
	for i, n := range held {
		names[i] = u.done[n].Name
	}
	why := u.names[u.next] + " was not downloaded"
	if u.stopped != "" {
		why = u.stopped + " failed to unpack, and Change Dump packages apply in order"
	}
	return fmt.Errorf("%d verified packages not unpacked because %s: %s; run again to finish", len(names), why, strings.Join(names, ", "))
}
