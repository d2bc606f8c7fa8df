package unpack_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/resourcesync"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/unpack"
)

// Two packages of one dump that carry one target with different content:
// both are refused it, each naming the other, and a rerun ends the same.
func TestUnpackRefusesTargetInTwoPackages(t *testing.T) {
	t.Parallel()
	z1, _ := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "one"}, {Rel: "b.txt", Data: "same"}})
	z2, _ := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "two"}, {Rel: "b.txt", Data: "same"}, {Rel: "c.txt", Data: "c"}})
	doc := verifytest.ResourceDump(t, t.TempDir(), z1, z2)
	dir := t.TempDir()
	for range 2 {
		res, fs := run(t, doc, dir, unpack.Options{})
		equalMaps(t, "tree", contents(readTree(t, dir)), map[string]string{"b.txt": "same", "c.txt": "c"})
		named := map[string]bool{}
		for _, f := range fs {
			if f.Code != finding.CheckClash {
				continue
			}
			if f.Severity != finding.Error || f.Path != "a.txt" {
				t.Errorf("unexpected clash finding: %s", f)
			}
			for _, p := range []string{"resourcedump-00001.zip", "resourcedump-00002.zip"} {
				if strings.HasSuffix(f.Source, p) {
					named[p] = true
				}
				if !strings.Contains(f.Source+" "+f.Msg, p) {
					t.Errorf("clash does not name %s: %s", p, f)
				}
			}
		}
		if len(named) != 2 {
			t.Errorf("want a refusal in each package, got:\n%s", dump(fs))
		}
		if res.Problems() == 0 || res.Refused != 2 {
			t.Errorf("result: %+v", res)
		}
	}
}

func TestUnpackWarnsNamesThatCollideOnMacOSAndWindows(t *testing.T) {
	t.Parallel()
	z1, _ := verifytest.Package(t, []verifytest.File{{Rel: "caf\u00e9.txt", Data: "x"}})
	z2, _ := verifytest.Package(t, []verifytest.File{{Rel: "cafe\u0301.txt", Data: "x"}, {Rel: "Readme", Data: "r"}, {Rel: "README", Data: "R"}})
	doc := verifytest.ResourceDump(t, t.TempDir(), z1, z2)
	_, fs := run(t, doc, t.TempDir(), unpack.Options{DryRun: true})
	n := 0
	for _, f := range fs {
		if f.Code == finding.CheckClash {
			n++
			if f.Severity != finding.Warning {
				t.Errorf("not a warning: %s", f)
			}
		}
	}
	if n != 2 {
		t.Errorf("want 2 warnings, got:\n%s", dump(fs))
	}
}

// A remote dump that links no detached manifests: the survey cannot read
// its packages before they are downloaded, so each claims its targets as
// it is unpacked, against the table the survey kept, and the later of two
// packages that carry a target with different content is refused it.
func TestUnpackRefusesLateClaimOfRemotePackage(t *testing.T) {
	t.Parallel()
	z1, _ := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "one"}, {Rel: "b.txt", Data: "same"}})
	z2, _ := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "two"}, {Rel: "b.txt", Data: "same"}})
	dir := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	var urls []resourcesync.URL
	for i, z := range [][]byte{z1, z2} {
		name := fmt.Sprintf("p%d.zip", i+1)
		if err := os.WriteFile(filepath.Join(dir, name), z, 0o644); err != nil {
			t.Fatal(err)
		}
		urls = append(urls, resourcesync.URL{Loc: srv.URL + "/" + name,
			MD: &resourcesync.MD{Type: "application/zip", Length: resourcesync.Int64(int64(len(z))), Hash: "sha-256:" + verifytest.SHA256(z)}})
	}
	md := resourcesync.MD{Capability: resourcesync.CapResourceDump, At: verifytest.Time, Completed: verifytest.Time}
	doc := verifytest.Encode(t, resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, urls)
	if err := os.WriteFile(filepath.Join(dir, "resourcedump.xml"), doc, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	// One package at a time, in document order: p1 lands first.
	res, fs := run(t, srv.URL+"/resourcedump.xml", dst, unpack.Options{Client: client, Jobs: 1})
	equalMaps(t, "tree", contents(readTree(t, dst)), map[string]string{"a.txt": "one", "b.txt": "same"})
	var clashes []finding.Finding
	for _, f := range fs {
		if f.Code == finding.CheckClash {
			clashes = append(clashes, f)
		}
	}
	if len(clashes) != 1 || !strings.HasSuffix(clashes[0].Source, "p2.zip") || !strings.Contains(clashes[0].Msg, "p1.zip") || res.Refused != 1 {
		t.Errorf("want p2 refused a.txt, naming p1; %+v\n%s", res, dump(fs))
	}
}
