package pkgread

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"fmt"
	"io"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/entryspool"
	"github.com/rsdump/rsdump/resourcesync"
)

// decodeManifest decodes and checks manifest.xml: its header (capability,
// Appendix A times), every entry's rules, the order of changes, and the
// hash and length of every bitstream. A manifest that does not decode
// rejects the package: its entries cannot be trusted. The entries come
// from dec when it was decoded from these very bytes; the header, a few
// hundred bytes, is always decoded here.
func (p *Package) decodeManifest(wantCap string, dec *Decoded) error {
	d, err := resourcesync.NewDecoder(bytes.NewReader(p.Manifest))
	if err != nil {
		return p.rejectManifest(err)
	}
	p.Header = d.Header()
	if err := p.checkHeader(wantCap); err != nil {
		return err
	}
	horizon := resourcesync.Horizon()
	if err := resourcesync.FutureHeader(ManifestName, p.Header, horizon); err != nil {
		return p.rejectManifest(err)
	}
	next := d.Next
	if dec != nil && p.Header.Kind == resourcesync.URLSet {
		// A spool of other bytes, damaged or missing is not an error: the
		// bytes are decoded, and the spool only saves time.
		if r, err := entryspool.Open[resourcesync.URL](dec.Spool, sha256.Sum256(p.Manifest)); err == nil {
			defer r.Close()
			next = r.Next
		}
	}
	var prev time.Time
	for n := 1; ; n++ {
		u, err := next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return p.rejectManifest(err)
		}
		if n > resourcesync.MaxEntries {
			return p.rejectManifest(fmt.Errorf("more than %d entries", resourcesync.MaxEntries))
		}
		if err := resourcesync.FutureEntry(ManifestName, n, u, horizon); err != nil {
			return p.rejectManifest(err)
		}
		p.checkEntry(n, u, &prev)
	}
}

func (p *Package) rejectManifest(err error) error {
	return reject(p.rep, finding.Finding{Severity: finding.Error, Code: finding.CheckManifest, Source: p.Source, Path: ManifestName, Msg: "manifest.xml: " + err.Error()})
}

// checkHeader applies the manifest rules to the header. A missing at (or
// from) is a warning, not an error: resync writes none, and the time is
// informative for a Destination, which checks every bitstream anyway.
func (p *Package) checkHeader(wantCap string) error {
	md := p.Header.MD
	switch {
	case md.Capability != resourcesync.CapResourceDumpManifest && md.Capability != resourcesync.CapChangeDumpManifest:
		return reject(p.rep, finding.Finding{Severity: finding.Error, Code: finding.CheckManifest, Source: p.Source, Path: ManifestName,
			Expected: "resourcedump-manifest or changedump-manifest", Actual: cmp.Or(md.Capability, "-"), Msg: "manifest.xml has the wrong capability"})
	case wantCap != "" && md.Capability != wantCap:
		return reject(p.rep, finding.Finding{Severity: finding.Error, Code: finding.CheckManifest, Source: p.Source, Path: ManifestName,
			Expected: wantCap, Actual: md.Capability, Msg: "manifest capability does not match the dump document"})
	}
	h := p.Header
	h.MD = lenientTimes(p, md)
	for _, pr := range resourcesync.ValidateHeader(h) {
		p.report(problemFinding(pr, finding.CheckManifest, ManifestName))
	}
	return nil
}

// lenientTimes warns about a missing at or from and returns the MD with a
// stand-in, so that ValidateHeader's rules on the other attributes still
// apply without repeating the same problem as an error.
func lenientTimes(p *Package, md resourcesync.MD) resourcesync.MD {
	stand := md.Completed
	if md.Capability == resourcesync.CapChangeDumpManifest {
		stand = md.Until
	}
	if stand.IsZero() {
		stand = time.Unix(0, 0).UTC()
	}
	if md.Capability == resourcesync.CapResourceDumpManifest && md.At.IsZero() {
		p.report(finding.Finding{Severity: finding.Warning, Code: finding.CheckTime, Path: ManifestName, Msg: "manifest <rs:md> has no at, which Appendix A requires (resync writes none)"})
		md.At = stand
	}
	if md.Capability == resourcesync.CapChangeDumpManifest && md.From.IsZero() {
		p.report(finding.Finding{Severity: finding.Warning, Code: finding.CheckTime, Path: ManifestName, Msg: "manifest <rs:md> has no from, which Appendix A requires"})
		md.From = stand
	}
	return md
}

// problemFinding is a finding of resourcesync's rules in verify's terms:
// a finding of check about path, whose message names the entry.
func problemFinding(f finding.Finding, check, path string) finding.Finding {
	if f.Entry > 0 {
		f.Msg, f.Entry = fmt.Sprintf("entry %d: %s", f.Entry, f.Msg), 0
	}
	f.Code, f.Path = check, path
	return f
}

// checkEntry validates entry n and adds it to the package's bitstreams.
func (p *Package) checkEntry(n int, u resourcesync.URL, prev *time.Time) {
	b := &Bitstream{N: n, URL: u, Length: -1}
	if u.MD != nil {
		b.Path = u.MD.Path
		if u.MD.Length != nil {
			b.Length = *u.MD.Length
		}
	}
	for _, pr := range resourcesync.ValidateEntry(p.Header, n, u) {
		p.report(problemFinding(pr, finding.CheckManifest, entryName(b.Path)))
	}
	p.checkChronology(b, prev)
	p.parseHash(b)
	if b.Path == "" && !b.Deleted() {
		b.Bad = "manifest entry has no path"
	}
	p.Bitstreams = append(p.Bitstreams, b)
}

// checkChronology enforces §13.2: a Change Dump Manifest lists changes in
// forward chronological order, by the time of each change.
func (p *Package) checkChronology(b *Bitstream, prev *time.Time) {
	when, ok := b.URL.ChangeTime()
	if p.Header.MD.Capability != resourcesync.CapChangeDumpManifest || !ok {
		return
	}
	if when.Before(*prev) {
		p.report(finding.Finding{Severity: finding.Error, Code: finding.CheckOrder, URI: b.URL.Loc, Path: entryName(b.Path),
			Expected: "at or after " + resourcesync.FormatTime(*prev), Actual: resourcesync.FormatTime(when),
			Msg: fmt.Sprintf("entry %d: changes are not in forward chronological order", b.N)})
	}
	*prev = when
}

func (p *Package) parseHash(b *Bitstream) {
	if b.URL.MD == nil || b.URL.MD.Hash == "" {
		return
	}
	set, err := digest.Parse(b.URL.MD.Hash)
	if err != nil {
		b.Bad = "hash attribute: " + err.Error()
		p.report(finding.Finding{Severity: finding.Error, Code: finding.CheckHash, URI: b.URL.Loc, Path: entryName(b.Path), Msg: b.Bad})
		return
	}
	b.Want = set
}
