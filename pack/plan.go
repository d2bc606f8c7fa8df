package pack

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/unixnano"
	"github.com/rsdump/rsdump/resourcesync"
)

// Fixed costs of a package beyond its bitstreams, as written by zipw:
// local header (30) + extended time (9) + ZIP64 extra (20) + data
// descriptor (24) + central header (46) + extended time (9) + ZIP64 extra
// (28), plus the name twice.
const (
	entryOverhead  = 30 + 9 + 20 + 24 + 46 + 9 + 28
	endOverhead    = 56 + 20 + 22
	manifestHeader = 1024 // prolog, root, <rs:md>, <rs:ln rel="up">, closing tag
	typeAllowance  = 80   // the media type is known only once the file is read
)

// planned is a package as the planner closed it.
type planned struct {
	seq         int // 1-based package number
	name        string
	items       []item
	plan        string    // fingerprint of the items, for resuming
	from, until time.Time // a Change Dump package: the interval of its changes
}

// planner groups walked files into packages so that no package exceeds
// the size limit (counting ZIP and manifest overhead), the entry limit or
// the manifest size limit. A file larger than the size limit gets a
// package of its own.
type planner struct {
	opts     *Options
	seq      int
	cur      []item
	size     int64 // estimated package bytes
	manifest int64 // estimated manifest bytes
	emit     func(planned) error

	// A Change Dump: items come in chronological order, and each package
	// covers the interval from the until of the one before, or the run's
	// from, to its last change, or the run's until for the last one.
	kind        *dumpKind
	from, until time.Time
	floor       time.Time // no change is earlier: see bump
}

func (p *planner) add(it item) error {
	cost, mcost := p.estimate(it)
	full := len(p.cur) >= p.opts.MaxEntries ||
		p.size+cost > p.opts.MaxPackageSize ||
		p.manifest+mcost > resourcesync.MaxBytes-manifestHeader
	if len(p.cur) > 0 && full {
		if err := p.close(false); err != nil {
			return err
		}
	}
	if len(p.cur) == 0 {
		p.size, p.manifest = endOverhead+manifestOverhead(), manifestHeader
	}
	if p.kind.changes() {
		p.bump(&it)
	}
	p.cur = append(p.cur, it)
	p.size += cost
	p.manifest += mcost
	return nil
}

// manifestOverhead is the ZIP cost of manifest.xml itself, whose data is
// counted in the manifest estimate.
func manifestOverhead() int64 { return entryOverhead + 2*int64(len("manifest.xml")) }

// estimate returns an upper bound of what it adds to the package and to
// its manifest.
// bump keeps package intervals apart: a Destination records the until of
// the last package it applied and skips changes at or before it, so a
// change at exactly the until of the package before must not start the
// next. Only when changes with one time fill more than a package (50,000
// deletions seen by one run, all at its time) are the later ones moved,
// by a nanosecond past that until.
func (p *planner) bump(it *item) {
	if it.datetime.Before(p.floor) {
		it.datetime = p.floor
	}
}

func (p *planner) estimate(it item) (pkg, manifest int64) {
	// A second change to one file in a package gets a suffix (uniqueName).
	name := int64(len(resourceDump.dir)+1+len(it.rel)) + suffixAllowance // both kinds' dir names are 9 bytes
	// Forced deflate of incompressible data adds 5 bytes per 64 KiB block.
	data := it.size + it.size/8192 + 64
	u := resourcesync.URL{
		Loc:     resourcesync.LocFor(p.opts.BaseURL, it.rel),
		Lastmod: it.mtime,
		MD: &resourcesync.MD{
			Hash:     placeholderHashes(p.opts.Hashes),
			Length:   resourcesync.Int64(it.size),
			Type:     strings.Repeat("x", typeAllowance),
			Path:     "/" + strings.Repeat("x", int(name)),
			Change:   it.change,
			Datetime: it.datetime,
		},
	}
	if it.change == resourcesync.ChangeDeleted {
		data, name = 0, 0
	}
	manifest = int64(resourcesync.EntrySize(u))
	return entryOverhead + 2*name + data + manifest, manifest
}

func placeholderHashes(algs []string) string {
	var s digest.Set
	for _, a := range algs {
		s = append(s, digest.Sum{Alg: a, Hex: strings.Repeat("0", digest.HexLen(a))})
	}
	return s.String()
}

// flush closes the last package.
func (p *planner) flush() error { return p.close(true) }

func (p *planner) close(last bool) error {
	if len(p.cur) == 0 {
		return nil
	}
	p.seq++
	k := p.kind
	if k == nil {
		k = resourceDump
	}
	pl := planned{seq: p.seq, name: k.packageName(p.seq), items: p.cur}
	if p.kind.changes() {
		pl.from, pl.until = p.from, p.cur[len(p.cur)-1].datetime
		if last && p.until.After(pl.until) {
			pl.until = p.until
		}
		p.from, p.floor = pl.until, pl.until.Add(time.Nanosecond)
	}
	pl.plan = fingerprint(p.opts, &pl)
	p.cur = nil
	return p.emit(pl)
}

// suffixAllowance is room in the estimates for uniqueName's suffix.
const suffixAllowance = 8

func packageName(seq int) string { return resourceDump.packageName(seq) }

func manifestName(pkg string) string { return strings.TrimSuffix(pkg, ".zip") + ".manifest.xml" }

// fingerprint identifies a package's planned content and the options that
// shape its bytes, so a resumed run reuses a package only when it would
// write the same one again.
func fingerprint(o *Options, pl *planned) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%v\x00%s\x00%d\x00%s\x00", o.BaseURL, o.CapabilityList, o.Hashes, o.Compress, o.Level, o.At.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(h, "%d\x00%d\x00", unixnano.Of(pl.from), unixnano.Of(pl.until))
	var b [8]byte
	for _, it := range pl.items {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", it.change, unixnano.Of(it.datetime), it.oldHash)
		h.Write([]byte(it.rel))
		binary.LittleEndian.PutUint64(b[:], uint64(it.size))
		h.Write(b[:])
		binary.LittleEndian.PutUint64(b[:], uint64(it.mtime.UnixNano()))
		h.Write(b[:])
		fmt.Fprintf(h, "%o\x00", it.mode.Perm())
	}
	return hex.EncodeToString(h.Sum(nil))
}
