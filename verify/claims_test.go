package verify_test

import (
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/verify"
)

// Two packages of one dump that carry one target with different content
// are an error naming both packages and the target.
func TestVerifyReportsTargetInTwoPackages(t *testing.T) {
	t.Parallel()
	z1, _ := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "one"}, {Rel: "b.txt", Data: "same"}})
	z2, _ := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "two"}, {Rel: "b.txt", Data: "same"}})
	doc := verifytest.ResourceDump(t, t.TempDir(), z1, z2)
	sum, fs := run(t, verify.Options{}, doc)
	var clashes []finding.Finding
	for _, f := range fs {
		if f.Code == finding.CheckClash {
			clashes = append(clashes, f)
		}
	}
	if len(clashes) != 1 || clashes[0].Severity != finding.Error {
		t.Fatalf("want one clash error, got:\n%s", dump(fs))
	}
	f := clashes[0]
	line := f.Source + " " + f.Msg
	if f.URI != verifytest.Loc("a.txt") || !strings.Contains(line, "resourcedump-00001.zip") || !strings.Contains(line, "resourcedump-00002.zip") {
		t.Errorf("clash does not name both packages and the target: %s", f)
	}
	if sum.Problems() == 0 {
		t.Errorf("summary has no problem: %+v", sum)
	}
}

// Names that differ only by Unicode normalisation or case are warned of:
// they collide on macOS and Windows.
func TestVerifyWarnsNamesThatCollideOnMacOSAndWindows(t *testing.T) {
	t.Parallel()
	nfc, nfd := "caf\u00e9.txt", "cafe\u0301.txt"
	z1, _ := verifytest.Package(t, []verifytest.File{{Rel: nfc, Data: "x"}, {Rel: "Readme.txt", Data: "y"}})
	z2, _ := verifytest.Package(t, []verifytest.File{{Rel: nfd, Data: "x"}, {Rel: "README.txt", Data: "y"}})
	doc := verifytest.ResourceDump(t, t.TempDir(), z1, z2)
	sum, fs := run(t, verify.Options{Jobs: 1}, doc)
	var warned []string
	for _, f := range fs {
		if f.Code == finding.CheckClash {
			if f.Severity != finding.Warning {
				t.Errorf("not a warning: %s", f)
			}
			warned = append(warned, f.Path)
		}
	}
	if len(warned) != 2 {
		t.Errorf("want warnings for %s and README.txt, got:\n%s", nfd, dump(fs))
	}
	if sum.Errors != 0 {
		t.Errorf("errors: %s", dump(fs))
	}
}
