package pack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/claim"
	"github.com/rsdump/rsdump/internal/sink"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// ShardOf is the shard, from 1, of the file at rel (slash-separated,
// relative to the source) among n: an FNV-1a hash of the path alone, so
// that every machine puts a file in the same shard whatever else it sees
// of the tree, and the shards are disjoint and cover the source by
// construction. Within a shard, files keep the order of the sorted walk.
func ShardOf(rel string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(rel))
	return int(h.Sum64()%uint64(n)) + 1
}

// shardTag names shard k of n, zero-padded so that names sort:
// "shard02of12".
func shardTag(k, n int) string {
	w := len(strconv.Itoa(n))
	return fmt.Sprintf("shard%0*dof%d", w, k, n)
}

// shardKind is a Resource Dump whose packages carry the shard in their
// names: resourcedump-shard2of3-00001.zip.
func shardKind(k, n int) *dumpKind {
	c := *resourceDump
	c.shard = shardTag(k, n)
	c.prefix = resourceDump.prefix + "-" + c.shard
	c.list = ""
	return &c
}

// shardJournalName is a shard's journal: its own, since other shards may
// be writing into the same output. Once it ends with its completion line
// it is the shard's record for Merge: the proof that the shard completed,
// and its packages.
func shardJournalName(k, n int) string { return journalName + "-" + shardTag(k, n) }

// mergeKey is what must be the same for every shard and the merge: the
// options that shape the packages and documents, not the source path,
// which differs between machines.
func mergeKey(o *Options) string {
	k := optionsKey(o, "")
	return k[strings.IndexByte(k, '|')+1:] + o.partKey
}

// shardJournals lists the shards' journals in out, each with its shard k
// and number of shards n.
func shardJournals(out *output) (map[string][2]int, error) {
	prefix := journalName + "-shard"
	found := map[string][2]int{}
	err := out.List(out.ctx, prefix, func(fi sink.Info) error {
		var k, n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(fi.Name, prefix), "%dof%d", &k, &n); err != nil || k < 1 || k > n {
			return nil
		}
		// A file, or on S3 the segments of one (NAME.seg/...).
		if name := shardJournalName(k, n); fi.Name == name || strings.HasPrefix(fi.Name, name+".") {
			found[name] = [2]int{k, n}
		}
		return nil
	})
	return found, err
}

// startShard removes the journals of sharded runs with another number of
// shards, completed or not, which a merge of this run must not meet. This
// shard's own, unless resumed, the journal's begin has already replaced.
func (r *run) startShard() error {
	js, err := shardJournals(r.out)
	for name, kn := range js {
		if err == nil && kn[1] != r.opts.Shards {
			err = r.out.remove(name)
		}
	}
	return err
}

// completeShard ends the shard's journal with its completion line, the
// last thing it writes: no dump document, list, Capability List or state,
// which Merge writes.
func (r *run) completeShard(completed time.Time) error {
	return r.journal.complete(journalDone{Completed: completed, Shard: r.opts.Shard, Shards: r.opts.Shards,
		Options: mergeKey(r.opts), Packages: len(r.pkgs)})
}

// ShardError is a merge refused because a shard is missing, unfinished,
// packed with other options, or overlaps another.
type ShardError struct {
	Shard, Shards int
	Msg           string
	Part          bool // a claimed part (Options.Parts), not a fixed shard
}

func (e *ShardError) Error() string {
	if e.Shard == 0 {
		return "merge: " + e.Msg
	}
	what := "shard"
	if e.Part {
		what = "part"
	}
	return fmt.Sprintf("merge: %s %d of %d: %s", what, e.Shard, e.Shards, e.Msg)
}

// shardRun is a completed shard, as its journal records it.
type shardRun struct {
	journal       string // its name
	shard, shards int
	at, completed time.Time
	options       string // mergeKey
	pkgs          []PackageInfo
}

// readShards reads every shard's journal in out and checks that they are
// one complete set packed with the options of key.
func readShards(out *output, key string) ([]shardRun, error) {
	js, err := shardJournals(out)
	if err != nil {
		return nil, err
	}
	if len(js) == 0 {
		return nil, &ShardError{Msg: fmt.Sprintf("no shard has completed in %s (no %s-shard*)", out.Loc(""), journalName)}
	}
	names := slices.SortedFunc(maps.Keys(js), func(a, b string) int {
		return cmp.Or(cmp.Compare(js[a][1], js[b][1]), cmp.Compare(js[a][0], js[b][0]))
	})
	var runs []shardRun
	for _, name := range names {
		s, err := readShardJournal(out, name, js[name][0], js[name][1])
		if err != nil {
			return nil, err
		}
		runs = append(runs, s)
	}
	return runs, checkShards(runs, key)
}

// readShardJournal reads shard k of n's journal, which must end with the
// shard's completion line, and takes from it the packages that line counts.
func readShardJournal(out *output, name string, k, n int) (shardRun, error) {
	j, ok, err := openJournal(out, name)
	if err != nil {
		return shardRun{}, err
	}
	loc := out.Loc(name)
	switch {
	case !ok:
		return shardRun{}, &ShardError{Shard: k, Shards: n, Msg: fmt.Sprintf("%s: not a journal rsdump wrote", loc)}
	case j.done == nil:
		return shardRun{}, &ShardError{Shard: k, Shards: n, Msg: fmt.Sprintf("has not completed (%s does not end with its completion line)", loc)}
	case j.done.Shard != k || j.done.Shards != n:
		return shardRun{}, &ShardError{Shard: k, Shards: n, Msg: fmt.Sprintf("%s: its completion line is shard %d of %d's", loc, j.done.Shard, j.done.Shards)}
	}
	s := shardRun{journal: name, shard: k, shards: n, at: j.head.At, completed: j.done.Completed, options: j.done.Options}
	kind := shardKind(k, n)
	for i := 1; i <= j.done.Packages; i++ {
		e, ok := j.entries[kind.packageName(i)]
		if !ok {
			return shardRun{}, &ShardError{Shard: k, Shards: n, Msg: fmt.Sprintf("%s records no package %s", loc, kind.packageName(i))}
		}
		s.pkgs = append(s.pkgs, e.Info)
	}
	return s, nil
}

// checkShards: one number of shards, each shard once, all of them, all
// packed with the merge's options.
func checkShards(runs []shardRun, key string) error {
	n := runs[0].shards
	have := map[int]bool{}
	for _, s := range runs {
		switch {
		case s.shards != n:
			return &ShardError{Shard: s.shard, Shards: s.shards, Msg: fmt.Sprintf("of %d shards, another of %d: shards of two runs", s.shards, n)}
		case s.options != key:
			return &ShardError{Shard: s.shard, Shards: s.shards, Msg: fmt.Sprintf("packed with other options than the merge's, says %s (give --merge the shards' flags)", s.journal)}
		}
		have[s.shard] = true
	}
	var missing []string
	first := 0
	for k := 1; k <= n; k++ {
		if !have[k] {
			missing = append(missing, strconv.Itoa(k))
			first = cmp.Or(first, k)
		}
	}
	if len(missing) > 0 {
		return &ShardError{Msg: fmt.Sprintf("shard %s of %d has not completed (no %s)", strings.Join(missing, ", "), n, shardJournalName(first, n))}
	}
	return nil
}

// Merge writes, into outDir (a directory or s3://BUCKET/PREFIX), the one
// Resource Dump of the packages every shard (Options.Shard of Shards)
// wrote there: the dump document, the Resource List, the Capability List
// and the state, as one unsharded run would. It checks that every shard
// completed with the same options, that its packages are there, and that
// no file is in two shards or in a shard not its own. opts are the
// shards' options; Shard and Shards are ignored.
func Merge(ctx context.Context, outDir string, opts Options) (*Result, error) {
	o := opts
	o.Shard, o.Shards, o.Changes = 0, 0, false
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	start := time.Now()
	out, err := openRunOutput(ctx, outDir, &o)
	if err != nil {
		return nil, err
	}
	defer out.close()
	pl, err := readPlan(out)
	if err != nil {
		return nil, err
	}
	if pl != nil {
		if err := checkParts(ctx, out, pl, &o); err != nil {
			return nil, err
		}
	}
	shards, err := readShards(out, mergeKey(&o))
	if err != nil {
		return nil, err
	}
	m := &mergeMode{ctx: ctx, shards: shards, completed: shards[0].completed, plan: pl}
	r := &run{opts: &o, dir: outDir, out: out, kind: resourceDump, pinned: true, end: m, events: serialize(o.Events)}
	r.at, r.list = shards[0].at, newListWriter(&o, out, resourcesync.CapResourceList, layout.ResourceListName)
	defer r.list.abort()
	for _, s := range shards {
		if s.at.Before(r.at) {
			r.at = s.at
		}
		if s.completed.After(m.completed) {
			m.completed = s.completed
		}
		r.pkgs = append(r.pkgs, s.pkgs...)
	}
	if err := r.checkPackages(); err != nil {
		return nil, err
	}
	return r.finish(start)
}

// mergeMode is the end of a Resource Dump written by shards: its
// packages are theirs, and its documents and state are written from
// their manifests, as one unsharded run writes them.
type mergeMode struct {
	ctx       context.Context // the merge's: a merge has no publishing to finish when it is interrupted
	shards    []shardRun
	completed time.Time // the last shard's
	plan      *partPlan // the shards are the parts of this plan; nil for fixed shards
}

// finish writes the documents and the state, then removes the shards'
// journals: the dump document and the state now record what they did,
// as after an unsharded pack, whose journal is removed at its end. A
// later merge then needs every shard packed again, and cannot take a
// shard packed again alone with the others' older packages.
func (m *mergeMode) finish(r *run, _ time.Time, _ *Result) error {
	if err := r.mergeShards(m.ctx, m.shards, m.plan, m.completed); err != nil {
		return err
	}
	for _, s := range m.shards {
		if err := r.out.remove(s.journal); err != nil {
			return err
		}
	}
	if m.plan == nil {
		return nil
	}
	// The plan and the claims go too: a worker run again after the merge
	// begins a new set of parts.
	if err := r.out.remove(partsName); err != nil {
		return err
	}
	return (&claim.Board{Store: r.out, Dir: claimsDir}).Clear(r.out.ctx)
}

func (*mergeMode) previous(*run) (func(string) bool, bool) { return nil, true }

// checkPackages: every package a shard recorded is there, with the
// length recorded, and its manifest and Metalink beside it.
func (r *run) checkPackages() error {
	for _, p := range r.pkgs {
		fi, err := r.out.Stat(r.out.ctx, p.Name)
		if err != nil {
			return &ShardError{Msg: fmt.Sprintf("package %s: %v", p.Name, err)}
		}
		if fi.Size != p.Length {
			return &ShardError{Msg: fmt.Sprintf("package %s: %d bytes, its shard recorded %d", r.out.Loc(p.Name), fi.Size, p.Length)}
		}
		for _, name := range []string{p.Manifest, p.Metalink} {
			if name == "" {
				continue
			}
			if ok, err := r.out.exists(name); !ok || err != nil {
				return &ShardError{Msg: fmt.Sprintf("%s of package %s is missing (%v)", r.out.Loc(name), p.Name, err)}
			}
		}
	}
	return nil
}

// mergeShards reads every shard's manifests at once and takes their
// entries in the order of the sorted walk, as one unsharded run lists
// them, into the Resource List and the state; then writes the documents.
func (r *run) mergeShards(ctx context.Context, shards []shardRun, pl *partPlan, completed time.Time) error {
	sw, err := newStateSpool(r.out)
	if err != nil {
		return err
	}
	add := func(u resourcesync.URL, rec record) error {
		if err := sw.add(rec); err != nil {
			return err
		}
		return r.list.add(listEntry(u))
	}
	if pl == nil {
		err = r.walkShards(ctx, shards, func(s shardRun) slice { return hashShard{s.shard, s.shards} }, add)
	} else {
		// Parts are ranges of the walk, in order: their concatenation is
		// in walk order, read one part at a time.
		for _, s := range shards {
			if err = r.walkShards(ctx, []shardRun{s}, func(s shardRun) slice { return pl.rangeOf(s.shard) }, add); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = r.finishDocuments(resourcesync.MD{At: r.at, Completed: completed})
	}
	if err != nil {
		sw.abort()
		return err
	}
	docs, err := r.list.bodies()
	if err != nil {
		sw.abort()
		return err
	}
	return sw.commitAs(stateHead{Version: stateVersion, Kind: resourcesync.CapResourceDump, Time: r.at, BaseURL: r.opts.BaseURL, List: docs})
}

// finishDocuments writes the Resource List, the dump document and the
// Capability List.
func (r *run) finishDocuments(md resourcesync.MD) error {
	if err := r.list.commit(md); err != nil {
		return err
	}
	if err := writeDump(r.opts, r.out, resourceDump, md, dumpEntries(r.opts, r.pkgs)); err != nil {
		return err
	}
	return r.writeCapabilities()
}

// shardEntry is a manifest entry of one shard, in walk order.
type shardEntry struct {
	u   resourcesync.URL
	rec record
	err error
}

// walkShards calls fn with every bitstream of every shard in the order of
// the sorted walk: a k-way merge of the shards' manifests, each already
// in that order. A path seen twice, or in a shard ShardOf does not give
// it, fails the merge: the shards overlap.
func (r *run) walkShards(ctx context.Context, shards []shardRun, sliceOf func(shardRun) slice, fn func(resourcesync.URL, record) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	heads := make([]*shardEntry, len(shards))
	chans := make([]chan shardEntry, len(shards))
	for i, s := range shards {
		chans[i] = make(chan shardEntry, 256)
		go r.readShard(ctx, s, chans[i])
	}
	next := func(i int) error {
		e, ok := <-chans[i]
		if !ok {
			heads[i] = nil
			return nil
		}
		heads[i] = &e
		return e.err
	}
	for i := range shards {
		if err := next(i); err != nil {
			return err
		}
	}
	last, lastShard := "", 0
	for {
		min := -1
		for i, h := range heads {
			if h != nil && (min < 0 || comparePaths(h.rec.Rel, heads[min].rec.Rel) < 0) {
				min = i
			}
		}
		if min < 0 {
			return ctx.Err()
		}
		h, s := heads[min], shards[min]
		if lastShard != 0 && comparePaths(last, h.rec.Rel) >= 0 {
			return &ShardError{Shard: s.shard, Shards: s.shards, Msg: fmt.Sprintf("%s is also in shard %d: the shards overlap", h.rec.Rel, lastShard)}
		}
		if !sliceOf(s).contains(h.rec.Rel) {
			if _, ok := sliceOf(s).(hashShard); ok {
				return &ShardError{Shard: s.shard, Shards: s.shards, Msg: fmt.Sprintf("%s belongs to shard %d", h.rec.Rel, ShardOf(h.rec.Rel, s.shards))}
			}
			return &ShardError{Shard: s.shard, Shards: s.shards, Msg: fmt.Sprintf("%s is outside the part's range in %s", h.rec.Rel, r.out.Loc(partsName)), Part: true}
		}
		if err := fn(h.u, h.rec); err != nil {
			return err
		}
		last, lastShard = h.rec.Rel, s.shard
		if err := next(min); err != nil {
			return err
		}
	}
}

// readShard sends the bitstreams of a shard's packages, in order.
func (r *run) readShard(ctx context.Context, s shardRun, c chan<- shardEntry) {
	defer close(c)
	send := func(e shardEntry) error {
		select {
		case c <- e:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, p := range s.pkgs {
		l := &resourcesync.Loader{NoParts: true, Entry: func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
			rc, err := r.recordOf(d.Loc, u)
			if err != nil || rc.Rel == "" {
				return err
			}
			return send(shardEntry{u: u, rec: rc})
		}}
		if err := r.out.load(l, p.Manifest); err != nil {
			if !errors.Is(err, context.Canceled) {
				send(shardEntry{err: err})
			}
			return
		}
	}
}
