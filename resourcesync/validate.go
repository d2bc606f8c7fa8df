package resourcesync

import (
	"time"

	"github.com/rsdump/rsdump/finding"
)

// family groups capabilities by the time attributes their documents use
// (Appendix A).
type family int

const (
	otherFamily    family = iota
	snapshotFamily        // at and completed
	changeFamily          // from and until
)

type capInfo struct {
	family     family
	manifest   bool // entries are bitstreams in a ZIP package, with a path
	urlsetOnly bool // the specification defines no index form
	entryCap   bool // entries name capability documents, so carry a capability
}

var capabilities = map[string]capInfo{
	CapResourceList:         {family: snapshotFamily},
	CapResourceDump:         {family: snapshotFamily},
	CapResourceDumpManifest: {family: snapshotFamily, manifest: true, urlsetOnly: true},
	CapChangeList:           {family: changeFamily},
	CapChangeDump:           {family: changeFamily},
	CapChangeDumpManifest:   {family: changeFamily, manifest: true, urlsetOnly: true},
	CapCapabilityList:       {urlsetOnly: true, entryCap: true},
	CapDescription:          {entryCap: true},
}

// ValidateHeader checks the root <rs:md> and <rs:ln> elements of a
// document, and returns a finding for each rule broken: a finding.Error
// breaks a rule of the specification or the schema, a finding.Warning
// marks something other tools may read differently or a recommendation
// not followed. Its findings have no Code and no Entry.
func ValidateHeader(h Header) []finding.Finding {
	r := &checker{}
	c, known := capabilities[h.MD.Capability]
	switch {
	case h.MD.Capability == "":
		r.errorf("<rs:md> has no capability")
	case !known:
		r.errorf("<rs:md> capability %q is not one of the values of §7", h.MD.Capability)
	case h.Kind == SitemapIndex && c.urlsetOnly:
		r.errorf("a %s is a <urlset> document, not a <sitemapindex>", h.MD.Capability)
	}
	r.checkHeaderTimes(c, h.MD)
	r.checkLinks(h.Links)
	return r.findings
}

// ValidateEntry checks entry number n (1-based) of the document whose
// header is h. It does not repeat the checks of ValidateHeader; with an
// unknown capability only the rules common to all documents apply. Its
// findings are those of ValidateHeader, with Entry n and URI the entry's
// <loc>.
func ValidateEntry(h Header, n int, u URL) []finding.Finding {
	r := &checker{entry: n, loc: u.Loc}
	c := capabilities[h.MD.Capability]
	r.checkLoc(u.Loc)
	r.checkChangeFreq(h.Kind, u.ChangeFreq)
	if listsChanges(h) && u.Lastmod.IsZero() && (u.MD == nil || u.MD.Datetime.IsZero()) {
		r.errorf("gives no time of change (rs:md datetime, or <lastmod> in ResourceSync 1.0), which a %s requires", h.MD.Capability)
	}
	md := u.MD
	if md == nil {
		md = &MD{} // so that rules on mandatory attributes still fire
	}
	r.checkEntryMD(h, c, md)
	r.checkLinks(u.Links)
	return r.findings
}

// listsChanges reports whether the entries of a document are changes to
// resources, which carry a change attribute and the time of the change
// (a datetime, or in ResourceSync 1.0 the lastmod): those of a Change
// List (not of its index) and of a Change Dump Manifest.
func listsChanges(h Header) bool {
	return h.MD.Capability == CapChangeList && h.Kind == URLSet ||
		h.MD.Capability == CapChangeDumpManifest
}

// checkHeaderTimes applies Appendix A to the root <rs:md>.
func (r *checker) checkHeaderTimes(c capInfo, m MD) {
	switch c.family {
	case snapshotFamily:
		if m.At.IsZero() {
			r.errorf("<rs:md> has no at, which a %s requires", m.Capability)
		}
	case changeFamily:
		if m.From.IsZero() {
			r.errorf("<rs:md> has no from, which a %s requires", m.Capability)
		}
	}
	r.checkTimeFamily(c.family, &m)
}

// checkTimeFamily rejects the time attributes of the other family, and
// intervals that end before they start.
func (r *checker) checkTimeFamily(f family, m *MD) {
	if f == snapshotFamily && (!m.From.IsZero() || !m.Until.IsZero()) {
		r.errorf("<rs:md> has from or until, which a %s does not use", m.Capability)
	}
	if f == changeFamily && (!m.At.IsZero() || !m.Completed.IsZero()) {
		r.errorf("<rs:md> has at or completed, which a change document does not use")
	}
	r.checkOrder("completed", m.Completed, "at", m.At)
	r.checkOrder("until", m.Until, "from", m.From)
}

func (r *checker) checkOrder(endName string, end time.Time, startName string, start time.Time) {
	if !end.IsZero() && !start.IsZero() && end.Before(start) {
		r.errorf("<rs:md> %s %s is before %s %s", endName, FormatTime(end), startName, FormatTime(start))
	}
}

func (r *checker) checkEntryMD(h Header, c capInfo, m *MD) {
	r.checkEntryCapability(c, h.MD.Capability, m.Capability)
	r.checkChange(h, m.Change)
	r.checkPath(c, m)
	r.checkTimeFamily(c.family, m)
	if c.family == changeFamily && !listsChanges(h) && m.From.IsZero() {
		r.warnf("<rs:md> has no from, which is recommended in a %s", h.Kind)
	}
	r.checkRepresentation("rs:md", m.Length, m.Hash)
}

func (r *checker) checkEntryCapability(c capInfo, docCap, entryCap string) {
	if _, known := capabilities[entryCap]; entryCap != "" && !known {
		r.errorf("<rs:md> capability %q is not one of the values of §7", entryCap)
	}
	if c.entryCap && entryCap == "" {
		r.errorf("<rs:md> has no capability, which entries of a %s require", docCap)
	}
}

func (r *checker) checkChange(h Header, change string) {
	switch {
	case change == "" && listsChanges(h):
		r.errorf("<rs:md> has no change, which a %s requires", h.MD.Capability)
	case change == "":
	case !listsChanges(h):
		r.errorf("<rs:md> change is used only in change lists and change dump manifests")
	case change != ChangeCreated && change != ChangeUpdated && change != ChangeDeleted:
		r.errorf("<rs:md> change %q is not created, updated or deleted", change)
	}
}

// checkPath applies §13.2: a manifest entry names its bitstream in the
// package, unless the resource was deleted.
func (r *checker) checkPath(c capInfo, m *MD) {
	switch {
	case !c.manifest && m.Path != "":
		r.warnf("<rs:md> path is used only in dump manifests")
	case c.manifest && m.Path == "" && m.Change != ChangeDeleted:
		r.errorf("<rs:md> has no path, which a manifest entry requires")
	}
	r.checkPathSyntax("rs:md", m.Path)
}
