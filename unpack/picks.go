package unpack

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/ziprange"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// A pickGroup is bitstreams restored on their own, rather than with their
// whole package: those of one package, read from inside it by ranges, or
// (ref.Loc a list, pkg nil) resources fetched from their URIs.
type pickGroup struct {
	ref   pkgread.PackageRef
	pkg   *pkgread.Package // the package's manifest, for the order of its entries; nil for URIs
	picks []*pkgread.Bitstream
}

// locate finds, for each damaged file, a document that names exactly the
// version rsdump wrote: a package of the dumps (Change Dumps first, each
// package's last change of a target first), else a list.
func (u *unpacker) locate(ctx context.Context, damaged map[string]deststate.Record, ro RepairOptions) ([]*pickGroup, error) {
	left := len(damaged)
	found := map[string]bool{}
	take := func(b *pkgread.Bitstream) bool {
		target, err := u.opts.Mapper.Target(b.URL)
		if err != nil || found[target] {
			return false
		}
		rec, ok := damaged[target]
		if !ok || !sameVersion(rec, b) {
			return false
		}
		found[target] = true
		left--
		return true
	}
	var groups []*pickGroup
	quiet := finding.NewReporter(nil)
	for _, doc := range ro.Dumps {
		d, err := pkgread.LoadDump(ctx, u.opts.Client, doc, quiet)
		if err != nil {
			continue // a dump that cannot be read carries nothing
		}
		refs := d.Packages
		if d.Capability == resourcesync.CapChangeDump {
			refs = slices.Clone(refs)
			slices.Reverse(refs)
		}
		for _, ref := range refs {
			if left == 0 {
				return groups, nil
			}
			if g := u.pickPackage(ctx, ref, take); g != nil {
				groups = append(groups, g)
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
	}
	for _, list := range ro.Lists {
		if left == 0 {
			break
		}
		g, err := u.pickList(ctx, list, take)
		if err != nil {
			return nil, err
		}
		if g != nil {
			groups = append(groups, g)
		}
	}
	return groups, nil
}

// pickPackage takes the bitstreams of a package that take wants, from its
// manifest alone (planManifest): the last entry of a target first, which
// in a Change Dump package is its last change.
func (u *unpacker) pickPackage(ctx context.Context, ref pkgread.PackageRef, take func(*pkgread.Bitstream) bool) *pickGroup {
	pkg, err := u.planManifest(ctx, ref, finding.NewReporter(nil))
	if err != nil || pkg == nil {
		return nil
	}
	g := &pickGroup{ref: ref, pkg: pkg}
	for i := len(pkg.Bitstreams) - 1; i >= 0; i-- {
		if b := pkg.Bitstreams[i]; b.Path != "" && b.Bad == "" && take(b) {
			g.picks = append(g.picks, b)
		}
	}
	if len(g.picks) == 0 {
		return nil
	}
	return g
}

// pickList takes the resources of a list (and its index's parts) that
// take wants, to fetch from their URIs.
func (u *unpacker) pickList(ctx context.Context, loc string, take func(*pkgread.Bitstream) bool) (*pickGroup, error) {
	g := &pickGroup{ref: pkgread.PackageRef{Loc: loc, Length: -1}}
	n := 0
	ld := resourcesync.Loader{Open: u.docs.Open, NotAfter: resourcesync.Horizon(),
		Entry: func(d *resourcesync.Document, _ int, e resourcesync.URL) error {
			if d.Header.Kind != resourcesync.URLSet {
				return nil
			}
			if _, err := resourcesync.Ref(ctx, d.Loc, e.Loc); err != nil {
				return nil // not one this list may name: not fetched
			}
			n++
			if b := listBitstream(n, e, resourcesync.Trust(ctx) != nil); b.Bad == "" && take(b) {
				g.picks = append(g.picks, b)
			}
			return nil
		}}
	if err := ld.Load(ctx, loc); err != nil && ctx.Err() != nil {
		return nil, err
	}
	if len(g.picks) == 0 {
		return nil, nil
	}
	return g, nil
}

// applyPicks restores a group's bitstreams as a package's are: staged
// (from inside the package by ranges, or from their URIs), each checked
// against its hashes and length, then committed with apply. It returns
// how many landed and the bytes fetched.
func (u *unpacker) applyPicks(ctx context.Context, g *pickGroup) (int, int64, error) {
	p := &pkgRun{u: u, ref: g.ref, rep: finding.NewReporter(u.rep.Send), byBits: map[*pkgread.Bitstream]*action{},
		m: pkgread.NewMeter(nil, pkgread.PackageRef{Length: 0})}
	for _, b := range g.picks {
		target, _ := u.opts.Mapper.Target(b.URL) // locate mapped it
		a := &action{b: b, target: target}
		if fi, err := u.dest.root.Lstat(target); err == nil && fi.Mode().IsRegular() {
			a.exists = true // damaged: ownership finds it is rsdump's
		}
		p.actions = append(p.actions, a)
	}
	if u.dest.root != nil {
		p.dirs = newDirs(u.dest.root)
	}
	defer p.close()
	if u.opts.DryRun {
		for _, a := range p.actions {
			p.report(a, finding.OK, CheckRepaired, "would repair (dry run)", "")
		}
		return len(p.actions), 0, nil
	}
	var fetched atomic.Int64
	p.counted = &fetched
	closeFn := func(*atomic.Int64) {}
	if g.pkg != nil {
		src, done, err := u.openEntries(ctx, g)
		if err != nil {
			for _, a := range p.actions {
				p.refuse(a, CheckDamaged, "not repaired: "+finding.MsgFor(err, g.ref.Loc))
			}
			return 0, 0, ctx.Err()
		}
		p.source, p.fetches, p.counted, closeFn = src, 1, nil, done // one package's ranges come one at a time
	}
	before := u.result().Written
	err := p.fetchAll(ctx)
	closeFn(&fetched)
	if err == nil {
		err = p.apply()
	}
	return u.result().Written - before, fetched.Load(), err
}

// openEntries opens a package for reading some of its bitstreams by
// ranges: the end of its central directory, then only the records of the
// entries wanted (ziprange, guided by the manifest's order). It returns
// the source of each bitstream's bytes, and a function that closes the
// package and adds the bytes fetched.
func (u *unpacker) openEntries(ctx context.Context, g *pickGroup) (func(context.Context, *action) (io.ReadCloser, error), func(*atomic.Int64), error) {
	ra, size, fetched, closeFn, err := u.openRanges(ctx, g.ref)
	if err != nil {
		return nil, nil, err
	}
	done := func(n *atomic.Int64) { n.Add(fetched()); closeFn() }
	zd, err := ziprange.ReadDir(ra, size)
	if err != nil {
		done(new(atomic.Int64))
		return nil, nil, fmt.Errorf("%s: %w", g.ref.Loc, err)
	}
	var order, names []string
	for _, b := range g.pkg.Bitstreams {
		if b.Path != "" {
			order = append(order, pkgread.EntryName(b.Path))
		}
	}
	for _, b := range g.picks {
		names = append(names, pkgread.EntryName(b.Path))
	}
	entries, err := zd.Find(names, ziprange.ListOrder(append(order, pkgread.ManifestName)))
	if err != nil {
		done(new(atomic.Int64))
		return nil, nil, fmt.Errorf("%s: %w", g.ref.Loc, err)
	}
	src := func(_ context.Context, a *action) (io.ReadCloser, error) {
		e, ok := entries[pkgread.EntryName(a.b.Path)]
		if !ok {
			return nil, fmt.Errorf("%s: no entry %s", g.ref.Loc, pkgread.EntryName(a.b.Path))
		}
		return zd.Open(e)
	}
	return src, done, nil
}

// openRanges opens a package for reading at any offset: a remote one by
// ranges from its mirrors, a local one where it is. fetched says how many
// bytes came over the network.
func (u *unpacker) openRanges(ctx context.Context, ref pkgread.PackageRef) (io.ReaderAt, int64, func() int64, func(), error) {
	if resourcesync.IsURL(ref.Loc) {
		rng, err := u.remote.Ranges(ctx, ref)
		if err != nil {
			return nil, 0, nil, nil, err
		}
		return rng, rng.Size(), rng.Fetched, func() {}, nil
	}
	ra, size, closeFn, err := pkgread.OpenLocation(ref.Loc)
	if err != nil {
		return nil, 0, nil, nil, err
	}
	return ra, size, func() int64 { return 0 }, func() { closeFn() }, nil
}
