package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/rsdump/rsdump/transfer"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
)

// getUnpacker hands each package to unpack as soon as it and every
// package listed before it are verified: Change Dump packages must be
// applied in order, and Resource Dump packages lose nothing by it.
type getUnpacker struct {
	dir   string
	opts  unpack.Options
	order map[string]int // file name → position among the sources' files
	mu    sync.Mutex
	done  map[int]*transfer.Result
	next  int
	msg   func(format string, args ...any)
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
	}
	return u
}

// completed is transfer.Options.Completed. It unpacks the longest run of
// finished packages at the head of the list, holding the lock so that
// packages go to unpack one at a time.
func (u *getUnpacker) completed(ctx context.Context, r *transfer.Result) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.done[u.order[r.Name]] = r
	var mine error
	for {
		next, ok := u.done[u.next]
		if !ok {
			return mine
		}
		delete(u.done, u.next)
		u.next++
		err := u.unpack(ctx, next)
		if next == r {
			mine = err
		} else if err != nil {
			u.msg("rsdump: %s: %v", next.Name, err)
		}
	}
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

// leftovers names the packages held back because one before them failed.
func (u *getUnpacker) leftovers() error {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.done) == 0 {
		return nil
	}
	return fmt.Errorf("%d verified packages not unpacked because an earlier package failed; run again to finish", len(u.done))
}
