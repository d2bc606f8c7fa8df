package pkgread

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/resourcesync"
)

// Dump is a Resource Dump or Change Dump document with the packages it
// lists, through its index when it is one.
type Dump struct {
	Source     string
	Header     resourcesync.Header
	Capability string // resourcesync.CapResourceDump or resourcesync.CapChangeDump
	Packages   []PackageRef
}

// PackageRef is a package as a dump document lists it.
type PackageRef struct {
	Doc      string               // the document that lists it
	N        int                  // its entry number there
	Entry    resourcesync.URL     // the entry itself
	Loc      string               // where to read it: a file or a URL
	Length   int64                // -1 when the document gives none
	Want     resourcesync.HashSet // the package's hashes
	Contents string               // where to read the detached manifest; empty when not linked
	Cap      string               // the manifest capability the package must have
}

// Until is the end of the interval a Change Dump package covers, or zero.
func (r PackageRef) Until() time.Time {
	if r.Entry.MD == nil {
		return time.Time{}
	}
	return r.Entry.MD.Until
}

// LoadDump reads the dump document at loc (a file or URL) and, for an
// index, every document it lists, checking them against §11, §13 and
// Appendix A. Problems are reported; the error wraps ErrRejected when the
// document is not a usable dump (reported too), and is anything else when
// it cannot be read at all. A package or detached manifest is read where
// resourcesync.Resolve says: a document that names one it may not (from
// a URL: one that is not an absolute URL, or an s3:// one without the
// user's grant) is rejected whole, before anything it names is read.
func LoadDump(ctx context.Context, client *http.Client, loc string, rep *finding.Reporter) (*Dump, error) {
	return LoadDumpAfter(ctx, client, loc, rep, nil)
}

// LoadDumpAfter is LoadDump that leaves unread each part of a Change Dump
// Index whose until applied says the tree has already (nil: none): the
// cost of a sync of a Change Dump that grew by a part a run stays that of
// the new parts, however long the chain. Their packages are not in the
// Dump.
func LoadDumpAfter(ctx context.Context, client *http.Client, loc string, rep *finding.Reporter, applied func(until time.Time) bool) (*Dump, error) {
	d := &Dump{Source: loc}
	l := &dumpLoader{ctx: ctx, rep: rep, dump: d}
	ld := resourcesync.Loader{Open: resourcesync.Opener{Client: client}.Open, Document: l.document, Entry: l.entry, PartFailed: l.partFailed, NotAfter: resourcesync.Horizon()}
	if applied != nil {
		ld.SkipPart = func(index *resourcesync.Document, _ int, u resourcesync.URL) bool {
			return index.Header.MD.Capability == resourcesync.CapChangeDump && u.MD != nil && !u.MD.Until.IsZero() && applied(u.MD.Until)
		}
	}
	err := ld.Load(ctx, loc)
	var oe *resourcesync.OpenError
	switch {
	case err == nil:
		return d, nil
	case errors.As(err, &oe) && errors.Is(err, httpc.ErrTooLarge):
		// Refused by its Content-Length before a byte was read: a bad
		// document, like one found too large while reading it.
		return nil, l.reject(oe.Loc, fmt.Sprintf("larger than the sitemap limit of %d bytes", resourcesync.MaxBytes))
	case errors.Is(err, ErrRejected), errors.As(err, &oe), ctx.Err() != nil:
		return nil, err
	}
	return nil, l.reject(loc, strings.TrimPrefix(err.Error(), loc+": ")) // the finding names loc
}

type dumpLoader struct {
	ctx  context.Context // of the LoadDump call: the Loader's callbacks take none
	rep  *finding.Reporter
	dump *Dump
	doc  *resourcesync.Document // the document whose entries come in
	prev time.Time              // the last until seen in it
}

func (l *dumpLoader) reject(src, msg string) error {
	return reject(l.rep, finding.Finding{Severity: finding.Error, Code: finding.CheckDocument, Source: src, Msg: msg})
}

// document checks a document's header: the top one must be a dump; the
// Loader has checked that a part has its index's capability.
func (l *dumpLoader) document(d *resourcesync.Document) error {
	h := d.Header
	if d.Index == nil {
		if c := h.MD.Capability; c != resourcesync.CapResourceDump && c != resourcesync.CapChangeDump {
			return l.reject(d.Loc, fmt.Sprintf("capability %q: not a Resource Dump or Change Dump", c))
		}
		l.dump.Header, l.dump.Capability = h, h.MD.Capability
	}
	for _, pr := range resourcesync.ValidateHeader(h) {
		f := problemFinding(pr, finding.CheckDocument, "")
		f.Source = d.Loc
		l.rep.Report(f)
	}
	l.doc, l.prev = d, time.Time{}
	return nil
}

func (l *dumpLoader) entry(d *resourcesync.Document, n int, u resourcesync.URL) error {
	for _, pr := range resourcesync.ValidateEntry(d.Header, n, u) {
		f := problemFinding(pr, finding.CheckDocument, "")
		f.Source = d.Loc
		l.rep.Report(f)
	}
	if d.Header.Kind == resourcesync.SitemapIndex {
		return nil
	}
	l.checkOrder(d.Loc, n, u)
	ref, err := l.packageRef(d.Loc, n, u)
	if err == nil {
		err = unauthenticated(l.ctx, ref)
	}
	if err != nil {
		return l.reject(d.Loc, fmt.Sprintf("entry %d: %s", n, strings.TrimPrefix(err.Error(), d.Loc+": ")))
	}
	l.dump.Packages = append(l.dump.Packages, ref)
	return nil
}

// partFailed reports a document an index lists that cannot be read or
// used. It is a problem of the dump, not a reason to stop: its siblings
// still count.
func (l *dumpLoader) partFailed(index *resourcesync.Document, n int, u resourcesync.URL, err error) error {
	if errors.Is(err, ErrRejected) {
		return nil // reported
	}
	var oe *resourcesync.OpenError
	if errors.As(err, &oe) {
		l.rep.Report(finding.Finding{Severity: finding.Error, Code: finding.CheckMissing, Source: index.Loc, URI: u.Loc, Path: oe.Loc, Msg: "document listed by the index cannot be read: " + oe.Err.Error()})
		return nil
	}
	part, _ := resourcesync.Resolve(l.ctx, index.Loc, u.Loc) // resolved once already: the Loader read it
	l.reject(part, err.Error())
	return nil
}

// checkOrder warns when a Change Dump's packages are not in forward
// chronological order, which §13.1 recommends and unpack relies on.
func (l *dumpLoader) checkOrder(src string, n int, u resourcesync.URL) {
	if l.dump.Capability != resourcesync.CapChangeDump || u.MD == nil {
		return
	}
	t := u.MD.From
	if t.IsZero() {
		t = u.MD.Until
	}
	if !t.IsZero() && t.Before(l.prev) {
		l.rep.Report(finding.Finding{Severity: finding.Warning, Code: finding.CheckOrder, Source: src, URI: u.Loc, Expected: "from at or after " + resourcesync.FormatTime(l.prev),
			Actual: resourcesync.FormatTime(t), Msg: fmt.Sprintf("entry %d: packages are not in forward chronological order", n)})
	}
	if !u.MD.Until.IsZero() {
		l.prev = u.MD.Until
	}
}

func (l *dumpLoader) packageRef(src string, n int, u resourcesync.URL) (PackageRef, error) {
	loc, err := resourcesync.Resolve(l.ctx, src, u.Loc)
	if err != nil {
		return PackageRef{}, err
	}
	r := PackageRef{Doc: src, N: n, Entry: u, Loc: loc, Length: -1, Cap: manifestCap(l.dump.Capability)}
	if u.MD != nil {
		if u.MD.Length != nil {
			r.Length = *u.MD.Length
		}
		if set, err := digest.Parse(u.MD.Hash); err == nil {
			r.Want = set
		} else {
			l.rep.Report(finding.Finding{Severity: finding.Error, Code: finding.CheckHash, Source: src, URI: u.Loc, Msg: "package hash attribute: " + err.Error()})
		}
	}
	if ln, ok := u.Link("contents"); ok && ln.Href != "" {
		if r.Contents, err = resourcesync.Resolve(l.ctx, src, ln.Href); err != nil {
			return PackageRef{}, err
		}
	}
	return r, nil
}

// unauthenticated refuses, under a trust (resourcesync.WithTrust), a
// package whose entry gives no hash rsdump computes: the signed document
// is what vouches for the package's bytes, through that hash, and without
// one nothing would.
func unauthenticated(ctx context.Context, ref PackageRef) error {
	if resourcesync.Trust(ctx) == nil {
		return nil
	}
	if _, ok := ref.Want.Strongest(); !ok {
		return fmt.Errorf("the package %s has no hash rsdump computes, so the signed document cannot vouch for its bytes: refused", ref.Loc)
	}
	return nil
}

func manifestCap(dumpCap string) string {
	if dumpCap == resourcesync.CapChangeDump {
		return resourcesync.CapChangeDumpManifest
	}
	return resourcesync.CapResourceDumpManifest
}
