package unpack_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
	"github.com/rsdump/rsdump/verify/verifytest"
)

var fixedTime = verifytest.Time

func tree(t testing.TB, files map[string]string) string { return verifytest.Tree(t, files) }

func writeFiles(t testing.TB, dir string, files map[string]string) {
	verifytest.WriteFiles(t, dir, files)
}

func exampleFiles(t testing.TB) map[string]string { return verifytest.ExampleFiles(t) }

func mapper(t testing.TB) verify.Mapper {
	m, err := verify.NewMapper(verify.ByURI, verifytest.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// run unpacks source into dir and returns the result and every finding.
func run(t testing.TB, source, dir string, opts unpack.Options) (*unpack.Result, []finding.Finding) {
	t.Helper()
	var fs []finding.Finding
	opts.Report = func(f finding.Finding) { fs = append(fs, f) }
	if opts.Mapper == (verify.Mapper{}) {
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
		if f.Severity == sev && f.Check == check && (path == "" || f.Path == path) {
			return f, true
		}
	}
	return finding.Finding{}, false
}

// readTree returns every regular file under dir but rsdump's state, as
// content plus mtime.
func readTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && rel == verify.StateDir {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		b, _ := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b) + "@" + fi.ModTime().UTC().Format(time.RFC3339Nano) + " " + fi.Mode().String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// contents drops the mtimes and modes readTree adds.
func contents(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v[:strings.LastIndex(v, "@")]
	}
	return out
}

// packDir packs src into a new directory.
func packDir(t testing.TB, src string, o pack.Options) string {
	t.Helper()
	out := t.TempDir()
	o.BaseURL, o.At = verifytest.BaseURL, fixedTime
	if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
		t.Fatalf("Pack: %v", err)
	}
	return out
}

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
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: %s missing", what, k)
		} else if g != w {
			t.Errorf("%s: %s = %.80q, want %.80q", what, k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected %s", what, k)
		}
	}
}

func verifyTree(t testing.TB, dir, against string) (*verify.Summary, []finding.Finding) {
	t.Helper()
	var fs []finding.Finding
	sum, err := verify.Audit(context.Background(), dir, against, mapper(t), verify.Options{Report: func(f finding.Finding) { fs = append(fs, f) }})
	if err != nil {
		t.Fatal(err)
	}
	return sum, fs
}
