package unpack

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rsdump/rsdump/resourcesync"
)

// A Sequence unpacks packages that arrive in any order (from rsdump get,
// say) in the order their dump lists them: each as soon as it and every
// package before it have arrived. Change Dump packages must be applied in
// order, and Resource Dump packages lose nothing by it. Like Unpack, it
// stops at a Change Dump package that fails: each package applied after
// it would move the state's until past changes that were never applied,
// and no later run would apply them.
type Sequence struct {
	// Unpacked, when set, is told of every package unpacked, and of every
	// failure other than that of the package whose Arrived call returns
	// it. It is called with the Sequence's lock held.
	Unpacked func(name string, res *Result, err error)

	dir     string
	opts    Options
	order   map[string]int // package name → position in the dump
	names   []string       // the packages, in order
	mu      sync.Mutex
	done    map[int]string // arrived, not yet unpacked: position → path
	next    int
	stopped string // the Change Dump package that failed, holding back the rest
	// snap is what the packages unpacked so far make of the tree: while
	// every one is a Resource Dump package of one at, unpacked without a
	// problem, the tree becomes a snapshot at that time once the last is.
	snap snapshot
}

type snapshot struct {
	at     time.Time
	broken bool // a package failed, was not a Resource Dump's, or had another at
}

// NewSequence returns a Sequence that unpacks into dir with opts the
// packages named, in that order.
func NewSequence(dir string, opts Options, names []string) *Sequence {
	s := &Sequence{dir: dir, opts: opts, order: map[string]int{}, names: names, done: map[int]string{}}
	for i, n := range names {
		s.order[n] = i
	}
	return s
}

// Arrived says that the package name is complete and verified at path. It
// unpacks the longest run of arrived packages at the head of the list,
// one at a time, until a Change Dump package fails, and returns the error
// of name's own unpacking, if it was unpacked.
func (s *Sequence) Arrived(ctx context.Context, name, path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.order[name]
	if !ok {
		return fmt.Errorf("%s: not a package of the sequence", name)
	}
	s.done[i] = path
	var mine error
	for s.stopped == "" {
		p, ok := s.done[s.next]
		if !ok {
			break
		}
		delete(s.done, s.next)
		n := s.names[s.next]
		s.next++
		res, err := s.unpack(ctx, p)
		isResource, at := resourcePackage(p)
		if err != nil && !isResource {
			s.stopped = n
		}
		s.snap.add(isResource && err == nil, at)
		if s.next == len(s.names) && err == nil {
			err = s.snap.record(s.dir, s.opts, n)
		}
		if n == name {
			mine = err
		}
		if s.Unpacked != nil && (err == nil || n != name) {
			s.Unpacked(n, res, err)
		}
	}
	return mine
}

// resourcePackage reports whether the package at path has a Resource
// Dump Manifest, whose failure holds nothing back: such a package does not
// move the state. A package that cannot be read might be a Change Dump
// package, so it counts as one. It returns the manifest's at.
func resourcePackage(path string) (bool, time.Time) {
	rc, err := openManifest(path)
	if err != nil {
		return false, time.Time{}
	}
	defer rc.Close()
	d, err := resourcesync.NewDecoder(rc) // the header only: what the entries say was unpacked already
	if err != nil || d.Header().MD.Capability != resourcesync.CapResourceDumpManifest {
		return false, time.Time{}
	}
	return true, d.Header().MD.At
}

func (sn *snapshot) add(ok bool, at time.Time) {
	switch {
	case !ok || at.IsZero() || !sn.at.IsZero() && !at.Equal(sn.at):
		sn.broken = true
	default:
		sn.at = at
	}
}

// record makes the tree a snapshot at the packages' at, as Unpack of their
// dump document does, once all of them unpacked without a problem: a
// Change Dump then continues from it. One package alone does not (see
// rewind): only the whole dump is a snapshot.
func (sn *snapshot) record(dir string, opts Options, last string) error {
	if sn.broken || sn.at.IsZero() || opts.DryRun {
		return nil
	}
	if err := recordSnapshot(dir, sn.at); err != nil {
		return fmt.Errorf("unpacking %s: recording the snapshot: %w", last, err)
	}
	return nil
}

func (s *Sequence) unpack(ctx context.Context, path string) (*Result, error) {
	res, err := Unpack(ctx, path, s.dir, s.opts)
	if err != nil {
		return nil, fmt.Errorf("unpacking %s: %w", path, err)
	}
	if res.Refused > 0 || res.Errors > 0 {
		return res, fmt.Errorf("unpacking %s: %d bitstreams refused, %d errors (run rsdump unpack for the report)", path, res.Refused, res.Errors)
	}
	return res, nil
}

// Leftovers names the packages held back because one before them failed
// to arrive or, being a Change Dump package, to unpack.
func (s *Sequence) Leftovers() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.done) == 0 {
		return nil
	}
	held := slices.Sorted(maps.Keys(s.done))
	names := make([]string, len(held))
	for i, n := range held {
		names[i] = s.names[n]
	}
	why := s.names[s.next] + " was not downloaded"
	if s.stopped != "" {
		why = s.stopped + " failed to unpack, and Change Dump packages apply in order"
	}
	return fmt.Errorf("%d verified packages not unpacked because %s: %s; run again to finish", len(names), why, strings.Join(names, ", "))
}
