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

// schemaURL sets every attribute the schema declares, within its
// patterns: a path with a leading slash and no trailing one, a type
// without dots or parameters, and the datetime of ResourceSync 1.1.
func schemaURL(t *testing.T) URL {
	u := fullURL(t)
	md := *u.MD
	md.Type = "text/plain"
	md.Path = "/resources/ünï cödé ☃.txt"
	u.MD = &md
	return u
}

// The schema drivers of ResourceSync 1.1 (ANSI/NISO Z39.99-2017), in the
// shared schemas: the 0.9.1 schema lacks the datetime every change carries.
const (
	urlsetSchema       = "rs-urlset-1.1.xsd"
	sitemapIndexSchema = "rs-sitemapindex-1.1.xsd"
)

func TestSchemaURLSet(t *testing.T) {
	t.Parallel()
	u := schemaURL(t)
	h := Header{
		Kind:  URLSet,
		MD:    MD{Capability: CapChangeDumpManifest, From: u.MD.From, Until: u.MD.Until},
		Links: []Link{{Rel: "up", Href: "http://127.0.0.1/capabilitylist.xml"}, u.Links[0]},
	}
	deleted := URL{Loc: "http://127.0.0.1/deleted", MD: &MD{Change: ChangeDeleted, Datetime: u.MD.Datetime}}
	doc := encodeDoc(t, h, u, deleted)
	if out, err := xmllint(t, urlsetSchema, doc); err != nil {
		t.Errorf("xmllint: %v\n%s\n%s", err, out, doc)
	}
}

func TestSchemaSitemapIndex(t *testing.T) {
	t.Parallel()
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
	if out, err := xmllint(t, sitemapIndexSchema, doc); err != nil {
		t.Errorf("xmllint: %v\n%s\n%s", err, out, doc)
	}
}

// The schema check can fail: a relative path is refused. And the 1.1
// driver is the one needed: the 0.9.1 one refuses every datetime.
func TestSchemaRejects(t *testing.T) {
	t.Parallel()
	u := schemaURL(t)
	u.MD.Path = "resources/a.txt"
	doc := encodeDoc(t, Header{MD: MD{Capability: CapChangeDumpManifest, From: u.MD.From}}, u)
	if out, err := xmllint(t, urlsetSchema, doc); err == nil || !strings.Contains(out, "path") {
		t.Errorf("xmllint accepted a relative path: %v\n%s", err, out)
	}
	doc = encodeDoc(t, Header{MD: MD{Capability: CapChangeList, From: u.MD.From}}, schemaURL(t))
	if out, err := xmllint(t, "rs-urlset.xsd", doc); err == nil || !strings.Contains(out, "datetime") {
		t.Errorf("the 0.9.1 schema accepted a datetime attribute: %v\n%s", err, out)
	}
}
