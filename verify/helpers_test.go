package verify_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/packtest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/transfer/pkgfetch"
	"github.com/rsdump/rsdump/verify"
)

// run verifies targets and returns the summary and every finding.
func run(t testing.TB, opts verify.Options, targets ...string) (*verify.Summary, []finding.Finding) {
	t.Helper()
	var fs []finding.Finding
	events := opts.Events // the test's own, if any
	opts.Events = func(e finding.Event) {
		if f, ok := e.(finding.Finding); ok {
			fs = append(fs, f)
		}
		finding.Send(events, e)
	}
	if opts.Packages == nil {
		// Remote packages are fetched as rsdump verify fetches them.
		opts.Packages = &pkgfetch.Remote{Client: opts.Client}
	}
	sum, err := verify.Verify(context.Background(), targets, opts)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return sum, fs
}

// writeFile writes data to name in a new temporary directory.
func writeFile(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// errorsOf returns the error findings as sorted "check path" strings, and
// unverified ones as "unverified check path".
func errorsOf(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		switch f.Severity {
		case finding.Error:
			out = append(out, f.Code+" "+f.Path)
		case finding.Unverified:
			out = append(out, "unverified "+f.Code+" "+f.Path)
		}
	}
	slices.Sort(out)
	return out
}

func wantsOf(ws []verifytest.Want) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Check+" "+w.Path)
	}
	slices.Sort(out)
	return out
}

func dump(fs []finding.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		if f.Severity != finding.OK {
			b.WriteString("  " + f.String() + "\n")
		}
	}
	return b.String()
}

// find returns the first finding with the given severity and check.
func find(fs []finding.Finding, sev finding.Severity, check string) (finding.Finding, bool) {
	for _, f := range fs {
		if f.Severity == sev && f.Code == check {
			return f, true
		}
	}
	return finding.Finding{}, false
}

var fixedTime = verifytest.Time

func tree(t testing.TB, files map[string]string) string { return verifytest.Tree(t, files) }

func exampleFiles(t testing.TB) map[string]string { return verifytest.ExampleFiles(t) }

func packDir(t testing.TB, src string, o pack.Options) string { return packtest.PackDir(t, src, o) }
