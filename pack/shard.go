package pack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/sink"
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

// shardRecordName is the record a shard writes once all its packages are
// published: the proof, for Merge, that it completed.
func shardRecordName(k, n int) string { return ".rsdump-" + shardTag(k, n) + ".json" }

const shardRecordPrefix = ".rsdump-shard"

type shardRecord struct {
	Version   int           `json:"version"`
	Options   string        `json:"options"` // mergeKey: the flags every shard and the merge must share
	Shard     int           `json:"shard"`
	Shards    int           `json:"shards"`
	At        time.Time     `json:"at"`
	Completed time.Time     `json:"completed"`
	Packages  []PackageInfo `json:"packages"`
}

// mergeKey is what must be the same for every shard and the merge: the
// options that shape the packages and documents, not the source path,
// which differs between machines.
func mergeKey(o *Options) string {
	k := optionsKey(o, "")
	return k[strings.IndexByte(k, '|')+1:]
}

// startShard removes this shard's record, since the shard is being packed
// again, and the records of sharded runs with another number of shards,
// which a merge of this run must not meet.
func (r *run) startShard() error {
	mine := shardRecordName(r.opts.Shard, r.opts.Shards)
	suffix := fmt.Sprintf("of%d.json", r.opts.Shards)
	var stale []string
	err := r.out.List(r.out.ctx, shardRecordPrefix, func(fi sink.Info) error {
		if fi.Name == mine || !strings.Contains(fi.Name, "/") && !strings.HasSuffix(fi.Name, suffix) {
			stale = append(stale, fi.Name)
		}
		return nil
	})
	for _, name := range stale {
		if err == nil {
			err = r.out.remove(name)
		}
	}
	return err
}

// finishShard writes the shard's record, the last thing it writes: no
// dump document, list, Capability List or state, which Merge writes.
func (r *run) finishShard(completed time.Time) error {
	rec := shardRecord{Version: 1, Options: mergeKey(r.opts), Shard: r.opts.Shard, Shards: r.opts.Shards,
		At: r.at, Completed: completed, Packages: r.pkgs}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return r.out.write(shardRecordName(rec.Shard, rec.Shards), b)
}

// ShardError is a merge refused because a shard is missing, unfinished,
// packed with other options, or overlaps another.
type ShardError struct {
	Shard, Shards int
	Msg           string
}

func (e *ShardError) Error() string {
	if e.Shard == 0 {
		return "merge: " + e.Msg
	}
	return fmt.Sprintf("merge: shard %d of %d: %s", e.Shard, e.Shards, e.Msg)
}

// maxShardRecord bounds a shard record read back: a line per package.
const maxShardRecord = 256 << 20

// readShards reads every shard record in out and checks that they are
// one complete set packed with the options of key.
func readShards(out *output, key string) ([]shardRecord, error) {
	var names []string
	err := out.List(out.ctx, shardRecordPrefix, func(fi sink.Info) error {
		if !strings.Contains(fi.Name, "/") && strings.HasSuffix(fi.Name, ".json") {
			names = append(names, fi.Name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, &ShardError{Msg: fmt.Sprintf("no shard has completed in %s (no %s*.json)", out.Loc(""), shardRecordPrefix)}
	}
	var recs []shardRecord
	for _, name := range names {
		b, err := sink.ReadFile(out.ctx, out, name, maxShardRecord)
		if err != nil {
			return nil, err
		}
		var rec shardRecord
		if err := json.Unmarshal(b, &rec); err != nil || rec.Version != 1 || rec.Shards < 1 || rec.Shard < 1 || rec.Shard > rec.Shards || name != shardRecordName(rec.Shard, rec.Shards) {
			return nil, &ShardError{Msg: fmt.Sprintf("%s: not a shard record rsdump wrote", out.Loc(name))}
		}
		recs = append(recs, rec)
	}
	return recs, checkShards(recs, key)
}

// checkShards: one number of shards, each shard once, all of them, all
// packed with the merge's options.
func checkShards(recs []shardRecord, key string) error {
	n := recs[0].Shards
	have := map[int]bool{}
	for _, rec := range recs {
		switch {
		case rec.Shards != n:
			return &ShardError{rec.Shard, rec.Shards, fmt.Sprintf("of %d shards, another of %d: shards of two runs", rec.Shards, n)}
		case rec.Options != key:
			return &ShardError{rec.Shard, rec.Shards, "packed with other options than the merge's (give --merge the shards' flags)"}
		}
		have[rec.Shard] = true
	}
	var missing []string
	for k := 1; k <= n; k++ {
		if !have[k] {
			missing = append(missing, strconv.Itoa(k))
		}
	}
	if len(missing) > 0 {
		return &ShardError{Msg: fmt.Sprintf("shard %s of %d has not completed (no %s)", strings.Join(missing, ", "), n, shardRecordName(mustAtoi(missing[0]), n))}
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Shard < recs[j].Shard })
	return nil
}

func mustAtoi(s string) int { n, _ := strconv.Atoi(s); return n }

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
	out, err := openOutput(ctx, outDir)
	if err != nil {
		return nil, err
	}
	defer out.close()
	recs, err := readShards(out, mergeKey(&o))
	if err != nil {
		return nil, err
	}
	m := &mergeMode{ctx: ctx, recs: recs, completed: recs[0].Completed}
	r := &run{opts: &o, dir: outDir, out: out, kind: resourceDump, pinned: true, end: m, events: serialize(o.Events)}
	r.at, r.list = recs[0].At, newListWriter(&o, out, resourcesync.CapResourceList, ResourceListName)
	defer r.list.abort()
	for _, rec := range recs {
		if rec.At.Before(r.at) {
			r.at = rec.At
		}
		if rec.Completed.After(m.completed) {
			m.completed = rec.Completed
		}
		r.pkgs = append(r.pkgs, rec.Packages...)
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
	recs      []shardRecord
	completed time.Time // the last shard's
}

func (m *mergeMode) finish(r *run, _ time.Time, _ *Result) error {
	return r.mergeShards(m.ctx, m.recs, m.completed)
}

func (*mergeMode) previous(*run) ([]resourcesync.URL, bool) { return nil, true }

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
func (r *run) mergeShards(ctx context.Context, recs []shardRecord, completed time.Time) error {
	sw, err := newStateWriter(r.out, stateHead{Version: 1, Kind: resourcesync.CapResourceDump, Time: r.at, BaseURL: r.opts.BaseURL})
	if err != nil {
		return err
	}
	err = r.walkShards(ctx, recs, func(u resourcesync.URL, rec record) error {
		if err := sw.add(rec); err != nil {
			return err
		}
		return r.list.add(listEntry(u))
	})
	if err == nil {
		err = r.finishDocuments(resourcesync.MD{At: r.at, Completed: completed})
	}
	if err != nil {
		sw.abort()
		return err
	}
	return sw.commit()
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
func (r *run) walkShards(ctx context.Context, recs []shardRecord, fn func(resourcesync.URL, record) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	heads := make([]*shardEntry, len(recs))
	chans := make([]chan shardEntry, len(recs))
	for i, rec := range recs {
		chans[i] = make(chan shardEntry, 256)
		go r.readShard(ctx, rec, chans[i])
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
	for i := range recs {
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
		h, rec := heads[min], recs[min]
		if lastShard != 0 && comparePaths(last, h.rec.Rel) >= 0 {
			return &ShardError{rec.Shard, rec.Shards, fmt.Sprintf("%s is also in shard %d: the shards overlap", h.rec.Rel, lastShard)}
		}
		if k := ShardOf(h.rec.Rel, rec.Shards); k != rec.Shard {
			return &ShardError{rec.Shard, rec.Shards, fmt.Sprintf("%s belongs to shard %d", h.rec.Rel, k)}
		}
		if err := fn(h.u, h.rec); err != nil {
			return err
		}
		last, lastShard = h.rec.Rel, rec.Shard
		if err := next(min); err != nil {
			return err
		}
	}
}

// readShard sends the bitstreams of a shard's packages, in order.
func (r *run) readShard(ctx context.Context, rec shardRecord, c chan<- shardEntry) {
	defer close(c)
	send := func(e shardEntry) error {
		select {
		case c <- e:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, p := range rec.Packages {
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
