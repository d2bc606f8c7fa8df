package resourcesync

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// xmllint validates doc against one of the schema drivers in
// ../shared/schemas and returns its combined output and exit error.
func xmllint(t *testing.T, schema string, doc []byte) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skip("xmllint is not on PATH (apt-get install libxml2-utils); schema test skipped")
	}
	xsd := filepath.Join(sharedPath(t, "schemas"), schema)
	file := filepath.Join(t.TempDir(), "doc.xml")
	if err := os.WriteFile(file, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--noout", "--schema", xsd, file).CombinedOutput()
	return string(out), err
}

// schemaURL sets every attribute the 0.9.1 schema declares, within its
// patterns: no datetime (not declared), a path with a leading slash and no
// trailing one, a type without dots or parameters.
func schemaURL(t *testing.T) URL {
	u := fullURL(t)
	md := *u.MD
	md.Datetime = time.Time{}
	md.Type = "text/plain"
	md.Path = "/resources/ünï cödé ☃.txt"
	u.MD = &md
	return u
}

func TestSchemaURLSet(t *testing.T) {
	u := schemaURL(t)
	h := Header{
		Kind:  URLSet,
		MD:    MD{Capability: CapChangeDumpManifest, From: u.MD.From, Until: u.MD.Until},
		Links: []Link{{Rel: "up", Href: "http://127.0.0.1/capabilitylist.xml"}, u.Links[0]},
	}
	doc := encodeDoc(t, h, u, URL{Loc: "http://127.0.0.1/deleted", Lastmod: u.Lastmod, MD: &MD{Change: ChangeDeleted}})
	if out, err := xmllint(t, "rs-urlset.xsd", doc); err != nil {
		t.Errorf("xmllint: %v\n%s\n%s", err, out, doc)
	}
}

func TestSchemaSitemapIndex(t *testing.T) {
	at := mustTime(t, "2024-01-02T03:04:05Z")
	h := Header{
		Kind:  SitemapIndex,
		MD:    MD{Capability: CapResourceDump, At: at, Completed: at.Add(time.Second)},
		Links: []Link{{Rel: "up", Href: "http://127.0.0.1/capabilitylist.xml"}},
	}
	u := URL{
		Loc:     "http://127.0.0.1/resourcedump1.xml",
		Lastmod: at,
		MD:      &MD{At: at, Completed: at.Add(time.Millisecond)},
		Links:   []Link{{Rel: "describedby", Href: "http://127.0.0.1/about", Pri: 2, Type: "text/html"}},
	}
	doc := encodeDoc(t, h, u)
	if out, err := xmllint(t, "rs-sitemapindex.xsd", doc); err != nil {
		t.Errorf("xmllint: %v\n%s\n%s", err, out, doc)
	}
}

// The schema check can fail: a datetime attribute, which the 0.9.1 schema
// does not declare, is refused.
func TestSchemaRejectsDatetime(t *testing.T) {
	u := schemaURL(t)
	u.MD.Datetime = u.Lastmod
	doc := encodeDoc(t, Header{MD: MD{Capability: CapChangeList, From: u.MD.From}}, u)
	out, err := xmllint(t, "rs-urlset.xsd", doc)
	if err == nil || !strings.Contains(out, "datetime") {
		t.Errorf("xmllint accepted a datetime attribute: %v\n%s", err, out)
	}
}
