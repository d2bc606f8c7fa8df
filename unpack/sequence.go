package unpack

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rsdump/rsdump/finding"
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
	running bool   // a call of Arrived is unpacking
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
// in order, several staging at once (UnpackInOrder), until a Change Dump
// package fails, and returns the error of name's own unpacking, if it was
// unpacked. While one call unpacks, the others only record their package
// and return: the call unpacking goes on with it.
func (s *Sequence) Arrived(ctx context.Context, name, path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.order[name]
	if !ok {
		return fmt.Errorf("%s: not a package of the sequence", name)
	}
	s.done[i] = path
	if s.running {
		return nil // the call unpacking takes it in turn
	}
	s.running = true
	defer func() { s.running = false }()
	var mine error
	for s.stopped == "" {
		var run []string
		for p, ok := s.done[s.next+len(run)]; ok; p, ok = s.done[s.next+len(run)] {
			run = append(run, p)
		}
		if len(run) == 0 {
			break
		}
		first := s.next
		// Unlocked while the run unpacks: the packages that arrive
		// meanwhile are only recorded, and their callers (get's download
		// goroutines) go on downloading.
		s.mu.Unlock()
		results := s.unpackRun(ctx, run)
		s.mu.Lock()
		for k, r := range results {
			delete(s.done, first+k)
			n := s.names[first+k]
			s.next++
			isResource := r.Header.MD.Capability == resourcesync.CapResourceDumpManifest
			err := r.err
			if err != nil && !isResource {
				s.stopped = n
			}
			s.snap.add(isResource && err == nil, r.Header.MD.At)
			if s.next == len(s.names) && err == nil {
				err = s.snap.record(s.dir, s.opts, n)
			}
			if n == name {
				mine = err
			}
			if s.Unpacked != nil && (err == nil || n != name) {
				s.Unpacked(n, &r.Result, err)
			}
		}
	}
	return mine
}

// seqResult is a package of a run and its error.
type seqResult struct {
	PackageResult
	err error
}

// unpackRun unpacks a run of arrived packages in order, stopping after a
// Change Dump package that fails; the packages not unpacked stay arrived.
// A package is a failure when any of its bitstreams was refused or any
// error found. A Resource Dump package's failure holds nothing back: it
// does not move the state.
func (s *Sequence) unpackRun(ctx context.Context, paths []string) []seqResult {
	var out []seqResult
	err := UnpackInOrder(ctx, paths, s.dir, s.opts, func(i int, r *PackageResult) bool {
		res := seqResult{PackageResult: *r}
		if r.Refused > 0 || r.Errors > 0 {
			res.err = fmt.Errorf("unpacking %s: %s refused, %s (run rsdump unpack for the report)", paths[i], finding.Plural(r.Refused, "bitstream"), finding.Plural(r.Errors, "error"))
		}
		out = append(out, res)
		return res.err == nil || r.Header.MD.Capability == resourcesync.CapResourceDumpManifest
	})
	if err != nil && len(out) < len(paths) { // the package in hand: a destination that cannot be used, a cancelled context
		out = append(out, seqResult{err: fmt.Errorf("unpacking %s: %w", paths[len(out)], err)})
	}
	return out
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
	if err := recordSnapshot(dir, opts, sn.at); err != nil {
		return fmt.Errorf("unpacking %s: recording the snapshot: %w", last, err)
	}
	return nil
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
	return fmt.Errorf("%s not unpacked because %s: %s; run again to finish", finding.Plural(len(names), "verified package"), why, strings.Join(names, ", "))
}
