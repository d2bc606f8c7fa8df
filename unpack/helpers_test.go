package unpack_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/packtest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
)

var fixedTime = verifytest.Time

func tree(t testing.TB, files map[string]string) string { return verifytest.Tree(t, files) }

func writeFiles(t testing.TB, dir string, files map[string]string) {
	verifytest.WriteFiles(t, dir, files)
}

func exampleFiles(t testing.TB) map[string]string { return verifytest.ExampleFiles(t) }

func mapper(t testing.TB) deststate.Mapper {
	m, err := deststate.NewMapper(deststate.ByURI, verifytest.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// run unpacks source into dir and returns the result and every finding.
func run(t testing.TB, source, dir string, opts unpack.Options) (*unpack.Result, []finding.Finding) {
	t.Helper()
	var fs []finding.Finding
	events := opts.Events // the test's own, if any
	opts.Events = func(e finding.Event) {
		if f, ok := e.(finding.Finding); ok {
			fs = append(fs, f)
		}
		finding.Send(events, e)
	}
	if opts.Mapper == (deststate.Mapper{}) {
		opts.Mapper = mapper(t)
	}
	res, err := unpack.Unpack(context.Background(), source, dir, opts)
	if err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	return res, fs
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

func find(fs []finding.Finding, sev finding.Severity, check, path string) (finding.Finding, bool) {
	for _, f := range fs {
		if f.Severity == sev && f.Code == check && (path == "" || f.Path == path) {
			return f, true
		}
	}
	return finding.Finding{}, false
}

// readTree is every file under dir but rsdump's state, as content plus
// mtime and mode.
func readTree(t testing.TB, dir string) map[string]string { return verifytest.ReadTreeStat(t, dir) }

func contents(m map[string]string) map[string]string { return verifytest.Contents(m) }

func packDir(t testing.TB, src string, o pack.Options) string { return packtest.PackDir(t, src, o) }

func writeFile(t testing.TB, p string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// listAll lists every path under dir, for checking that nothing appeared.
func listAll(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func equalMaps(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	verifytest.SameFiles(t, what, got, want)
}

func verifyTree(t testing.TB, dir, against string) (*verify.Summary, []finding.Finding) {
	t.Helper()
	var fs []finding.Finding
	sum, err := verify.Audit(context.Background(), dir, against, mapper(t), verify.Options{Events: finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })})
	if err != nil {
		t.Fatal(err)
	}
	return sum, fs
}
