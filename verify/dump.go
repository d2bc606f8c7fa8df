package verify

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/rsdump/rsdump/internal/digest"
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
	Doc      string           // the document that lists it
	N        int              // its entry number there
	Entry    resourcesync.URL // the entry itself
	Loc      string           // where to read it: a file or a URL
	Length   int64            // -1 when the document gives none
	Want     digest.Set       // the package's hashes
	Contents string           // where to read the detached manifest; empty when not linked
	Cap      string           // the manifest capability the package must have
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
// it cannot be read at all.
func LoadDump(ctx context.Context, client *http.Client, loc string, rep *Reporter) (*Dump, error) {
	data, err := fetch(ctx, client, loc)
	if err != nil {
		return nil, err
	}
	d := &Dump{Source: loc}
	l := &dumpLoader{ctx: ctx, client: client, rep: rep, dump: d}
	if err := l.document(loc, data, true); err != nil {
		return nil, err
	}
	return d, nil
}

type dumpLoader struct {
	ctx    context.Context
	client *http.Client
	rep    *Reporter
	dump   *Dump
}

func (l *dumpLoader) reject(src, msg string) error {
	return reject(l.rep, Finding{Severity: Error, Check: CheckDocument, Source: src, Msg: msg})
}

// document decodes one document; top is false for the children of an
// index, which must not be indexes themselves.
func (l *dumpLoader) document(src string, data []byte, top bool) error {
	dec, err := resourcesync.NewDecoder(bytes.NewReader(data))
	if err != nil {
		return l.reject(src, err.Error())
	}
	h := dec.Header()
	if err := l.checkHeader(src, h, top); err != nil {
		return err
	}
	var prev time.Time
	for n := 1; ; n++ {
		u, err := dec.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return l.reject(src, err.Error())
		}
		l.entry(src, h, n, u, &prev)
	}
}

func (l *dumpLoader) checkHeader(src string, h resourcesync.Header, top bool) error {
	c := h.MD.Capability
	switch {
	case c != resourcesync.CapResourceDump && c != resourcesync.CapChangeDump:
		return l.reject(src, fmt.Sprintf("capability %q: not a Resource Dump or Change Dump", c))
	case top:
		l.dump.Header, l.dump.Capability = h, c
	case c != l.dump.Capability:
		return l.reject(src, fmt.Sprintf("capability %s differs from the index's %s", c, l.dump.Capability))
	case h.Kind == resourcesync.SitemapIndex:
		return l.reject(src, "an index listed by an index")
	}
	for _, pr := range resourcesync.ValidateHeader(h) {
		f := problemFinding(pr, CheckDocument, "")
		f.Source = src
		l.rep.Report(f)
	}
	return nil
}

func (l *dumpLoader) entry(src string, h resourcesync.Header, n int, u resourcesync.URL, prev *time.Time) {
	for _, pr := range resourcesync.ValidateEntry(h, n, u) {
		f := problemFinding(pr, CheckDocument, "")
		f.Source = src
		l.rep.Report(f)
	}
	if h.Kind == resourcesync.SitemapIndex {
		l.child(src, u)
		return
	}
	l.checkOrder(src, n, u, prev)
	l.dump.Packages = append(l.dump.Packages, l.packageRef(src, n, u))
}

// child loads a document an index lists. One that cannot be read is a
// problem of the dump, not a reason to stop.
func (l *dumpLoader) child(src string, u resourcesync.URL) {
	loc := Resolve(src, u.Loc)
	data, err := fetch(l.ctx, l.client, loc)
	if err != nil {
		l.rep.Report(Finding{Severity: Error, Check: CheckMissing, Source: src, URI: u.Loc, Path: loc, Msg: "document listed by the index cannot be read: " + err.Error()})
		return
	}
	l.document(loc, data, false) // a rejected child is reported; its siblings still count
}

// checkOrder warns when a Change Dump's packages are not in forward
// chronological order, which §13.1 recommends and unpack relies on.
func (l *dumpLoader) checkOrder(src string, n int, u resourcesync.URL, prev *time.Time) {
	if l.dump.Capability != resourcesync.CapChangeDump || u.MD == nil {
		return
	}
	t := u.MD.From
	if t.IsZero() {
		t = u.MD.Until
	}
	if !t.IsZero() && t.Before(*prev) {
		l.rep.Report(Finding{Severity: Warning, Check: CheckOrder, Source: src, URI: u.Loc, Expected: "from at or after " + resourcesync.FormatTime(*prev),
			Actual: resourcesync.FormatTime(t), Msg: fmt.Sprintf("entry %d: packages are not in forward chronological order", n)})
	}
	if !u.MD.Until.IsZero() {
		*prev = u.MD.Until
	}
}

func (l *dumpLoader) packageRef(src string, n int, u resourcesync.URL) PackageRef {
	r := PackageRef{Doc: src, N: n, Entry: u, Loc: Resolve(src, u.Loc), Length: -1, Cap: manifestCap(l.dump.Capability)}
	if u.MD != nil {
		if u.MD.Length != nil {
			r.Length = *u.MD.Length
		}
		if set, err := digest.Parse(u.MD.Hash); err == nil {
			r.Want = set
		} else {
			l.rep.Report(Finding{Severity: Error, Check: CheckHash, Source: src, URI: u.Loc, Msg: "package hash attribute: " + err.Error()})
		}
	}
	if ln, ok := u.Link("contents"); ok && ln.Href != "" {
		r.Contents = Resolve(src, ln.Href)
	}
	return r
}

func manifestCap(dumpCap string) string {
	if dumpCap == resourcesync.CapChangeDump {
		return resourcesync.CapChangeDumpManifest
	}
	return resourcesync.CapResourceDumpManifest
}
