package pack

import (
	"context"
	"os"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// A mode is one kind of pack run: a Resource Dump (resourceMode), a
// Change Dump (changesMode) or one shard of a Resource Dump (shardMode).
// Pack's one pipeline (plan, read, write, publish, finish) calls its mode
// at the few points where they differ, and nowhere else asks which mode
// it is in. The merge of the shards (mergeMode) shares the end of it, a
// finisher.
type mode interface {
	finisher
	// kind is the dump whose packages the run writes.
	kind() *dumpKind
	// open readies the run before its journal is loaded (a Change Dump
	// reads its baseline and the Change Dump it continues) and returns
	// the journal's name and key, given the key of the options.
	open(ctx context.Context, r *run, key string) (name, jkey string, err error)
	// start runs once the journal is loaded, r.at being the run's time,
	// and before the journal replaces an earlier run's.
	start(ctx context.Context, r *run) error
	// begin runs once the journal has begun, before the first package.
	begin(ctx context.Context, r *run) error
	// plan walks what the run packs and hands its packages, planned, to
	// emit in order.
	plan(ctx context.Context, r *run, emit func(planned) error) error
	// packed takes each package once it is published, in order, with the
	// entries of its manifest, or nil for a package an interrupted run
	// wrote, whose detached manifest is then read.
	packed(r *run, info PackageInfo, entries []resourcesync.URL) error
	// close removes the scratch files of open and begin.
	close()
}

// finisher is the end of a run: what it writes once its packages are all
// published, and what the new dump document lists besides them.
type finisher interface {
	// finish writes the documents and the state, or a shard's completion
	// line, and completes res.
	finish(r *run, completed time.Time, res *Result) error
	// previous keeps the files of earlier runs the new documents go on
	// naming (nil: none). wrote is false when the run wrote no dump
	// document, so that no file of an earlier run is stale.
	previous(r *run) (keep func(name string) bool, wrote bool)
}

// newMode is the mode Options choose.
func newMode(o *Options) mode {
	switch {
	case o.Changes:
		return &changesMode{}
	case o.Shards > 0:
		return &shardMode{k: shardKind(o.Shard, o.Shards), rng: o.part}
	}
	return &resourceMode{}
}

// noHooks gives a mode the hooks it has nothing to do in.
type noHooks struct{}

func (noHooks) start(context.Context, *run) error       { return nil }
func (noHooks) previous(*run) (func(string) bool, bool) { return nil, true }
func (noHooks) close()                                  {}

// resourceMode writes a Resource Dump of the whole source, with its
// Resource List, Capability List and state.
type resourceMode struct {
	noHooks
	files *recSpool // the files packed, in walk order, for the state
}

func (*resourceMode) kind() *dumpKind { return resourceDump }

func (m *resourceMode) open(_ context.Context, r *run, key string) (string, string, error) {
	r.removeStaleTemps()
	return journalName, key, nil
}

func (m *resourceMode) begin(_ context.Context, r *run) error {
	r.list = newListWriter(r.opts, r.out, resourcesync.CapResourceList, layout.ResourceListName)
	var err error
	m.files, err = newRecSpool(r.out.scratch)
	return err
}

func (m *resourceMode) plan(ctx context.Context, r *run, emit func(planned) error) error {
	return r.walkPlan(ctx, emit, nil)
}

// packed gives the Resource List the package's bitstreams and records
// them for the state: packages are published in walk order, and so the
// records come in the order the state lists them.
func (m *resourceMode) packed(r *run, info PackageInfo, entries []resourcesync.URL) error {
	return r.eachEntry(info, entries, func(u resourcesync.URL, rec record) error {
		if rec.Rel != "" {
			if err := m.files.add(&rec); err != nil {
				return err
			}
		}
		return r.list.add(listEntry(u))
	})
}

// finish writes the Resource List, the dump document, the Capability
// List, and last the state: every file packed, as this run recorded it.
func (m *resourceMode) finish(r *run, completed time.Time, _ *Result) error {
	if err := r.finishDocuments(resourcesync.MD{At: r.at, Completed: completed}); err != nil {
		return err
	}
	docs, err := r.list.bodies()
	if err != nil {
		return err
	}
	sw, err := newStateWriter(r.out, stateHead{Version: stateVersion, Kind: resourcesync.CapResourceDump, Time: r.at, BaseURL: r.opts.BaseURL, List: docs})
	if err != nil {
		return err
	}
	if err := m.files.each(sw.add); err != nil {
		sw.abort()
		return err
	}
	return sw.commit()
}

func (m *resourceMode) close() { m.files.close() }

// shardMode writes the packages of one shard of a Resource Dump, and
// keeps its journal, ended by a completion line, as their record for
// Merge: no dump document, list, Capability List or state, which Merge
// writes from every shard's manifests.
type shardMode struct {
	noHooks
	k   *dumpKind
	rng *partRange // a claimed part's range; nil for a fixed shard
}

func (m *shardMode) kind() *dumpKind { return m.k }

// open: the journal is the shard's own, since other shards may be writing
// into the same directory, and so are their temporary files.
//
// A claimed part's journal is keyed without the source's path: the worker
// that takes it over may see the source mounted elsewhere, and resumes it.
func (m *shardMode) open(_ context.Context, r *run, key string) (string, string, error) {
	if m.rng != nil {
		key = mergeKey(r.opts)
	}
	return shardJournalName(r.opts.Shard, r.opts.Shards), key + "|" + m.k.shard, nil
}

func (m *shardMode) begin(_ context.Context, r *run) error { return r.startShard() }

func (m *shardMode) plan(ctx context.Context, r *run, emit func(planned) error) error {
	if m.rng != nil {
		return r.walkPlan(ctx, emit, m.rng)
	}
	n, k := r.opts.Shards, r.opts.Shard
	return r.walkPlan(ctx, emit, hashShard{k, n})
}

func (*shardMode) packed(*run, PackageInfo, []resourcesync.URL) error { return nil }

func (m *shardMode) finish(r *run, completed time.Time, res *Result) error {
	res.Document = r.out.Loc(r.journal.name)
	return r.completeShard(completed)
}

// slice is the files of one shard or part: contains picks them, and
// outside says of a directory that none of its files can be one.
type slice interface {
	contains(rel string) bool
	outside(dir string) bool
}

// hashShard is a fixed shard: files by the hash of their path (ShardOf),
// found in every directory.
type hashShard struct{ k, n int }

func (s hashShard) contains(rel string) bool { return ShardOf(rel, s.n) == s.k }
func (hashShard) outside(string) bool        { return false }

// walkPlan walks the source into packages; mine, when given, picks the
// files that are the run's.
func (r *run) walkPlan(ctx context.Context, emit func(planned) error, mine slice) error {
	p := &planner{opts: r.opts, kind: r.kind, emit: emit}
	visit := p.add
	w := &walker{ctx: ctx, follow: r.opts.FollowSymlinks, visit: visit, warn: r.skip}
	if mine != nil {
		w.visit = func(it item) error {
			if !mine.contains(it.rel) {
				return nil // another shard's
			}
			return p.add(it)
		}
		w.prune = mine.outside
	}
	if r.out.dir != "" {
		w.exclude = realPath(r.dir)
	}
	if err := w.walk(r.src); err != nil {
		return err
	}
	return p.flush()
}

// removeStaleTemps deletes the temporary files a killed run left in the
// output directory; a shard leaves them, since other shards may be
// writing there.
func (r *run) removeStaleTemps() {
	if r.out.dir != "" {
		removeStaleTemps(r.dir)
	}
}

// eachEntry calls fn with each entry of a published package's manifest
// and its state record (the zero record for a deletion): the entries the
// run wrote, or, for a package reused from an interrupted run, those of
// its detached manifest.
func (r *run) eachEntry(info PackageInfo, entries []resourcesync.URL, fn func(resourcesync.URL, record) error) error {
	if entries == nil {
		l := resourcesync.Loader{
			Entry: func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
				rec, err := r.recordOf(d.Loc, u)
				if err != nil {
					return err
				}
				return fn(u, rec)
			},
			NoParts: true,
		}
		return r.out.load(&l, info.Manifest)
	}
	loc := r.out.Loc(info.Manifest)
	for _, u := range entries {
		rec, err := r.recordOf(loc, u)
		if err != nil {
			return err
		}
		if err := fn(u, rec); err != nil {
			return err
		}
	}
	return nil
}

// recSpool keeps records in a scratch file, to be read back in the order
// they were added: memory holds none of them.
type recSpool struct {
	f *os.File
	w *recWriter
}

func newRecSpool(dir string) (*recSpool, error) {
	f, err := os.CreateTemp(dir, ".rsdump-spool-*.tmp")
	if err != nil {
		return nil, err
	}
	return &recSpool{f: f, w: newRecWriter(f)}, nil
}

func (s *recSpool) add(rec *record) error { return s.w.write(rec) }

// each reads the records back, in order.
func (s *recSpool) each(fn func(record) error) error {
	if err := s.w.flush(); err != nil {
		return err
	}
	if _, err := s.f.Seek(0, 0); err != nil {
		return err
	}
	rr := newRecReader(s.f.Name(), s.f)
	for {
		rec, ok, err := rr.next()
		if err != nil || !ok {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}

// close removes the scratch file.
func (s *recSpool) close() {
	if s != nil {
		s.f.Close()
		os.Remove(s.f.Name())
	}
}
