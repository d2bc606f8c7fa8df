package resourcesync

import (
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
)

func TestValidateHeader(t *testing.T) {
	t.Parallel()
	at := mustTime(t, "2024-01-02T00:00:00Z")
	before := mustTime(t, "2024-01-01T00:00:00Z")
	up := []Link{{Rel: "up", Href: "http://x/cap.xml"}}
	tests := []struct {
		name string
		h    Header
		want string // "" for a clean header; else a message fragment
		sev  finding.Severity
	}{
		{"resource dump manifest", Header{MD: MD{Capability: CapResourceDumpManifest, At: at, Completed: at}, Links: up}, "", 0},
		{"change list", Header{MD: MD{Capability: CapChangeList, From: before, Until: at}}, "", 0},
		{"change list index", Header{Kind: SitemapIndex, MD: MD{Capability: CapChangeList, From: before}}, "", 0},
		{"resource dump index", Header{Kind: SitemapIndex, MD: MD{Capability: CapResourceDump, At: at}}, "", 0},
		{"capability list", Header{MD: MD{Capability: CapCapabilityList}, Links: up}, "", 0},
		{"description index", Header{Kind: SitemapIndex, MD: MD{Capability: CapDescription}}, "", 0},
		{"no capability", Header{MD: MD{At: at}}, "has no capability", finding.Error},
		{"unknown capability", Header{MD: MD{Capability: "resourcedumps"}}, `capability "resourcedumps" is not one of`, finding.Error},
		{"manifest as index", Header{Kind: SitemapIndex, MD: MD{Capability: CapResourceDumpManifest, At: at}}, "a resourcedump-manifest is a <urlset> document", finding.Error},
		{"capability list as index", Header{Kind: SitemapIndex, MD: MD{Capability: CapCapabilityList}}, "a capabilitylist is a <urlset>", finding.Error},
		{"resource list without at", Header{MD: MD{Capability: CapResourceList}}, "has no at, which a resourcelist requires", finding.Error},
		{"resource dump without at", Header{MD: MD{Capability: CapResourceDump}}, "has no at", finding.Error},
		{"resource dump index without at", Header{Kind: SitemapIndex, MD: MD{Capability: CapResourceDump}}, "has no at", finding.Error},
		{"manifest without at", Header{MD: MD{Capability: CapResourceDumpManifest}}, "has no at", finding.Error},
		{"resource list with from", Header{MD: MD{Capability: CapResourceList, At: at, From: before}}, "has from or until", finding.Error},
		{"resource dump with until", Header{MD: MD{Capability: CapResourceDump, At: at, Until: at}}, "has from or until", finding.Error},
		{"change list without from", Header{MD: MD{Capability: CapChangeList}}, "has no from, which a changelist requires", finding.Error},
		{"change dump without from", Header{MD: MD{Capability: CapChangeDump}}, "has no from", finding.Error},
		{"change dump manifest without from", Header{MD: MD{Capability: CapChangeDumpManifest}}, "has no from", finding.Error},
		{"change dump with at", Header{MD: MD{Capability: CapChangeDump, From: before, At: at}}, "has at or completed", finding.Error},
		{"change list with completed", Header{MD: MD{Capability: CapChangeList, From: before, Completed: at}}, "has at or completed", finding.Error},
		{"completed before at", Header{MD: MD{Capability: CapResourceDump, At: at, Completed: before}}, "completed 2024-01-01T00:00:00Z is before at 2024-01-02T00:00:00Z", finding.Error},
		{"until before from", Header{MD: MD{Capability: CapChangeDump, From: at, Until: before}}, "until 2024-01-01T00:00:00Z is before from", finding.Error},
		{"link without rel", Header{MD: MD{Capability: CapCapabilityList}, Links: []Link{{Href: "http://x/"}}}, "<rs:ln> has no rel", finding.Error},
		{"link without href", Header{MD: MD{Capability: CapCapabilityList}, Links: []Link{{Rel: "up"}}}, "<rs:ln> has no href", finding.Error},
	}
	for _, tt := range tests {
		checkProblems(t, tt.name, ValidateHeader(tt.h), 0, tt.want, tt.sev)
	}
}

func TestValidateEntry(t *testing.T) {
	t.Parallel()
	at := mustTime(t, "2024-01-02T00:00:00Z")
	before := mustTime(t, "2024-01-01T00:00:00Z")
	rdm := Header{MD: MD{Capability: CapResourceDumpManifest, At: at}}
	cdm := Header{MD: MD{Capability: CapChangeDumpManifest, From: before}}
	cl := Header{MD: MD{Capability: CapChangeList, From: before}}
	cli := Header{Kind: SitemapIndex, MD: MD{Capability: CapChangeList, From: before}}
	cd := Header{MD: MD{Capability: CapChangeDump, From: before}}
	rd := Header{MD: MD{Capability: CapResourceDump, At: at}}
	rli := Header{Kind: SitemapIndex, MD: MD{Capability: CapResourceList, At: at}}
	capl := Header{MD: MD{Capability: CapCapabilityList}}
	loc := "http://x/a"
	file := func(m MD) URL { return URL{Loc: loc, Lastmod: at, MD: &m} }
	link := func(l Link) URL { return URL{Loc: loc, Links: []Link{l}} }
	tests := []struct {
		name string
		h    Header
		u    URL
		want string
		sev  finding.Severity
	}{
		{"manifest entry", rdm, file(MD{Path: "/resources/a", Hash: "md5:00ff sha-256:abcd", Length: Int64(0)}), "", 0},
		{"change dump manifest entry", cdm, file(MD{Change: ChangeCreated, Path: "/changes/a"}), "", 0},
		{"deleted without path", cdm, file(MD{Change: ChangeDeleted}), "", 0},
		{"change list entry", cl, file(MD{Change: ChangeUpdated}), "", 0},
		{"change list entry with datetime, no lastmod", cl, URL{Loc: loc, MD: &MD{Change: ChangeUpdated, Datetime: at}}, "", 0},
		{"deletion with datetime, resource time unknown", cdm, URL{Loc: loc, MD: &MD{Change: ChangeDeleted, Datetime: at}}, "", 0},
		{"change dump entry", cd, URL{Loc: loc, MD: &MD{From: before, Until: at}}, "", 0},
		{"resource list index entry", rli, URL{Loc: loc, MD: &MD{At: at}}, "", 0},
		{"capability list entry", capl, URL{Loc: loc, MD: &MD{Capability: CapResourceDump}}, "", 0},
		{"link", rd, link(Link{Rel: "contents", Href: "http://x/m.xml", Pri: 1, Length: Int64(3)}), "", 0},

		{"no loc", rd, URL{}, "no <loc>", finding.Error},
		{"relative loc", rd, URL{Loc: "/a"}, "is not an absolute URI", finding.Error},
		{"unparsable loc", rd, URL{Loc: "http://x/\x7f%zz"}, "is not an absolute URI", finding.Error},
		{"loc with space", rd, URL{Loc: "http://x/a b"}, `not percent-encoded (" " at byte 10)`, finding.Warning},
		{"loc with non-ascii", rd, URL{Loc: "http://x/é"}, "not percent-encoded", finding.Warning},
		{"changefreq in index", rli, URL{Loc: loc, ChangeFreq: "daily"}, "<changefreq> is not part of a <sitemap> entry", finding.Error},
		{"bad changefreq", rd, URL{Loc: loc, ChangeFreq: "often"}, `<changefreq> "often" is not one of`, finding.Error},
		{"change list without datetime or lastmod", cl, URL{Loc: loc, MD: &MD{Change: ChangeCreated}}, "gives no time of change (rs:md datetime, or <lastmod> in ResourceSync 1.0), which a changelist requires", finding.Error},
		{"change dump manifest without datetime or lastmod", cdm, URL{Loc: loc, MD: &MD{Change: ChangeDeleted}}, "gives no time of change", finding.Error},
		{"change list without change", cl, file(MD{}), "has no change, which a changelist requires", finding.Error},
		{"change list without md", cl, URL{Loc: loc, Lastmod: at}, "has no change", finding.Error},
		{"bad change", cl, file(MD{Change: "modified"}), `change "modified" is not created, updated or deleted`, finding.Error},
		{"change in resource dump manifest", rdm, file(MD{Change: ChangeCreated, Path: "/a"}), "change is used only in change lists", finding.Error},
		{"change in change list index", cli, URL{Loc: loc, MD: &MD{Change: ChangeCreated, From: before}}, "change is used only in change lists", finding.Error},
		{"manifest without path", rdm, file(MD{}), "has no path, which a manifest entry requires", finding.Error},
		{"created without path", cdm, file(MD{Change: ChangeCreated}), "has no path", finding.Error},
		{"dotdot path", rdm, file(MD{Path: "/resources/../../etc/passwd"}), `has a ".." segment`, finding.Error},
		{"dotdot relative path", rdm, file(MD{Path: "../a"}), `has a ".." segment`, finding.Error},
		{"backslash path", rdm, file(MD{Path: `/resources\a`}), "contains a backslash", finding.Error},
		{"trailing slash path", rdm, file(MD{Path: "/resources/"}), "ends with a slash", finding.Error},
		{"relative path", rdm, file(MD{Path: "notes/a.txt"}), "has no leading slash", finding.Warning},
		{"path outside manifest", rd, URL{Loc: loc, MD: &MD{Path: "/a"}}, "path is used only in dump manifests", finding.Warning},
		{"from in resource dump entry", rd, URL{Loc: loc, MD: &MD{From: before}}, "has from or until", finding.Error},
		{"at in change dump entry", cd, URL{Loc: loc, MD: &MD{At: at, From: before}}, "has at or completed", finding.Error},
		{"entry completed before at", rd, URL{Loc: loc, MD: &MD{At: at, Completed: before}}, "completed 2024-01-01T00:00:00Z is before at", finding.Error},
		{"entry until before from", cd, URL{Loc: loc, MD: &MD{From: at, Until: before}}, "until 2024-01-01T00:00:00Z is before from", finding.Error},
		{"change dump entry without from", cd, URL{Loc: loc}, "no from, which is recommended", finding.Warning},
		{"change list index entry without from", cli, URL{Loc: loc}, "no from, which is recommended in a sitemapindex", finding.Warning},
		{"capability list entry without capability", capl, URL{Loc: loc}, "has no capability, which entries of a capabilitylist require", finding.Error},
		{"unknown entry capability", capl, URL{Loc: loc, MD: &MD{Capability: "dump"}}, `capability "dump" is not one of`, finding.Error},
		{"negative md length", rd, URL{Loc: loc, MD: &MD{Length: Int64(-1)}}, "<rs:md> length -1 is negative", finding.Error},
		{"negative link length", rd, link(Link{Rel: "r", Href: "http://m/", Length: Int64(-2)}), "<rs:ln> length -2 is negative", finding.Error},
		{"pri too high", rd, link(Link{Rel: "r", Href: "http://m/", Pri: 1000000}), "pri 1000000 is not in 1..999999", finding.Error},
		{"pri negative", rd, link(Link{Rel: "r", Href: "http://m/", Pri: -1}), "pri -1 is not in 1..999999", finding.Error},
		{"link without rel", rd, link(Link{Href: "http://m/"}), "<rs:ln> has no rel", finding.Error},
		{"link without href", rd, link(Link{Rel: "duplicate"}), "<rs:ln> has no href", finding.Error},
		{"link path with dotdot", rd, link(Link{Rel: "r", Href: "http://m/", Path: "/a/../../b"}), `<rs:ln> path "/a/../../b" has a ".." segment`, finding.Error},
		{"hash uppercase hex", rd, URL{Loc: loc, MD: &MD{Hash: "md5:00FF"}}, `hash token "md5:00FF" is not alg:hex`, finding.Error},
		{"hash without alg", rd, URL{Loc: loc, MD: &MD{Hash: "00ff"}}, `hash token "00ff"`, finding.Error},
		{"hash empty alg", rd, URL{Loc: loc, MD: &MD{Hash: ":00ff"}}, `hash token ":00ff"`, finding.Error},
		{"hash empty hex", rd, URL{Loc: loc, MD: &MD{Hash: "md5:"}}, `hash token "md5:"`, finding.Error},
		{"hash odd hex", rd, URL{Loc: loc, MD: &MD{Hash: "md5:abc"}}, `hash token "md5:abc"`, finding.Error},
		{"hash second token bad", rd, URL{Loc: loc, MD: &MD{Hash: "md5:00ff sha-256:xyz"}}, `hash token "sha-256:xyz"`, finding.Error},
		{"hash comma", rd, URL{Loc: loc, MD: &MD{Hash: "md5:00ff,sha-256:00"}}, `hash token "md5:00ff,sha-256:00"`, finding.Error},
		{"hash blank", rd, URL{Loc: loc, MD: &MD{Hash: " "}}, "has no alg:hex token", finding.Error},
		{"link hash", rd, link(Link{Rel: "r", Href: "http://m/", Hash: "sha256=00"}), `<rs:ln> hash token "sha256=00"`, finding.Error},
	}
	for _, tt := range tests {
		checkProblems(t, tt.name, ValidateEntry(tt.h, 7, tt.u), 7, tt.want, tt.sev)
	}
}

// checkProblems expects either no problem (want "") or a problem of
// severity sev whose message contains want, and no other Error.
func checkProblems(t *testing.T, name string, ps []finding.Finding, entry int, want string, sev finding.Severity) {
	t.Helper()
	found := false
	for _, p := range ps {
		if p.Entry != entry {
			t.Errorf("%s: problem %v has entry %d, want %d", name, p, p.Entry, entry)
		}
		if want != "" && p.Severity == sev && strings.Contains(p.Msg, want) {
			found = true
		} else if p.Severity == finding.Error || want == "" {
			t.Errorf("%s: unexpected %v", name, p)
		}
	}
	if want != "" && !found {
		t.Errorf("%s: no %v containing %q in %v", name, sev, want, ps)
	}
}
