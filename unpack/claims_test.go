package unpack_test

import (
	"strings"
	"testing"

	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
	"github.com/rsdump/rsdump/verify/verifytest"
)

// Two packages of one dump that carry one target with different content:
// both are refused it, each naming the other, and a rerun ends the same.
func TestUnpackRefusesTargetInTwoPackages(t *testing.T) {
	z1, _ := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "one"}, {Rel: "b.txt", Data: "same"}})
	z2, _ := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "two"}, {Rel: "b.txt", Data: "same"}, {Rel: "c.txt", Data: "c"}})
	doc := verifytest.ResourceDump(t, t.TempDir(), z1, z2)
	dir := t.TempDir()
	for range 2 {
		res, fs := run(t, doc, dir, unpack.Options{})
		equalMaps(t, "tree", contents(readTree(t, dir)), map[string]string{"b.txt": "same", "c.txt": "c"})
		named := map[string]bool{}
		for _, f := range fs {
			if f.Check != verify.CheckClash {
				continue
			}
			if f.Severity != verify.Error || f.Path != "a.txt" {
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
	z1, _ := verifytest.Package(t, []verifytest.File{{Rel: "caf\u00e9.txt", Data: "x"}})
	z2, _ := verifytest.Package(t, []verifytest.File{{Rel: "cafe\u0301.txt", Data: "x"}, {Rel: "Readme", Data: "r"}, {Rel: "README", Data: "R"}})
	doc := verifytest.ResourceDump(t, t.TempDir(), z1, z2)
	_, fs := run(t, doc, t.TempDir(), unpack.Options{DryRun: true})
	n := 0
	for _, f := range fs {
		if f.Check == verify.CheckClash {
			n++
			if f.Severity != verify.Warning {
				t.Errorf("not a warning: %s", f)
			}
		}
	}
	if n != 2 {
		t.Errorf("want 2 warnings, got:\n%s", dump(fs))
	}
}
