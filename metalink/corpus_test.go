package metalink

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rsdump/rsdump/finding"
)

type outcome int

const (
	clean      outcome = iota // decodes with no problem at all
	warns                     // decodes with warnings only
	refused                   // decodes, but with errors: must not be used
	unreadable                // Decode returns no document
)

func (o outcome) String() string {
	return [...]string{"clean", "warnings", "refused", "unreadable"}[o]
}

// corpusTable is the expected outcome for every file of
// shared/metalink/corpus, with exactly the distinct problem codes
// reported (for unreadable files, the fatal error's code). The reasons
// are in the corpus README and in the codes' rules.
var corpusTable = []struct {
	file  string
	want  outcome
	codes []string
}{
	{"aria2--base_uri.xml", warns, []string{"size-missing", "no-hash", "url-relative"}},
	{"aria2--local-metaurl.meta4", warns, []string{"unknown-attribute", "size-missing", "no-hash", "url-relative"}},
	{"aria2--metalink3-dirtraversal.xml", refused, []string{"metalink3", "name-traversal", "size-missing", "no-hash"}},
	{"aria2--metalink4-attrs.xml", warns, []string{"priority-invalid", "size-missing", "no-hash"}},
	{"aria2--metalink4-dirtraversal.xml", refused, []string{"name-traversal", "size-missing", "no-hash"}},
	{"aria2--metalink4-dosdirtraversal.xml", refused, []string{"name-traversal", "size-missing", "no-hash"}},
	{"aria2--metalink4-groupbymetaurl.xml", warns, []string{"no-hash"}},
	{"aria2--metalink4.xml", refused, []string{"hash-malformed", "hash-weak"}}, // 31-digit md5
	{"aria2--serialize_session.meta4", warns, []string{"size-missing", "no-hash"}},
	{"aria2--test.xml", warns, []string{"metalink3", "size-missing", "hash-weak", "no-hash", "hash-unknown-type", "pieces-no-size"}},
	{"aria2-inline--file-name-empty.meta4", refused, []string{"name-missing", "size-missing", "no-hash"}},
	{"aria2-inline--hash-no-type.meta4", refused, []string{"size-missing", "hash-no-type", "no-hash"}},
	{"aria2-inline--metaurl-no-mediatype.meta4", refused, []string{"size-missing", "no-hash", "metaurl-mediatype"}},
	{"aria2-inline--pieces-no-length.meta4", refused, []string{"size-missing", "no-hash", "pieces-length"}},
	{"aria2-inline--signature-no-mediatype.meta4", warns, []string{"signature-mediatype", "size-missing", "no-hash"}},
	{"aria2-inline--size-int64-max.meta4", warns, []string{"no-hash"}},
	{"aria2-inline--size-negative.meta4", refused, []string{"size-invalid", "no-hash"}},
	{"aria2-inline--v3-prefixed.metalink", warns, []string{"metalink3", "no-hash"}},
	{"curl--test2017.metalink", refused, []string{"metalink3", "name-traversal", "size-missing", "url-invalid"}}, // ~/
	{"curl--test2018.metalink", warns, []string{"metalink3", "name-questionable", "size-missing", "url-invalid"}},
	{"curl--test2022.metalink", warns, []string{"metalink3", "name-questionable", "size-missing", "url-invalid"}},
	{"dir2ml--readme-example.meta4", warns, []string{"xml-unbound-prefix", "unknown-attribute"}},
	{"dpb587-metalink--stable-v0.2.0.meta4", clean, nil},
	{"libmetalink--LibO_3.5.4_Win_x86_install_multi.msi.meta4", warns, []string{"publisher-v3"}},
	{"libmetalink--test1.xml", refused, []string{"metalink3", "v3-unsupported", "size-invalid", "priority-invalid", "size-missing",
		"hash-no-type", "hash-weak", "no-hash", "pieces-count", "name-missing", "name-traversal"}},
	{"libmetalink--test2.xml", refused, []string{"size-invalid", "priority-invalid", "size-missing", "hash-unknown-type",
		"hash-no-type", "hash-weak", "no-hash", "pieces-count", "name-missing", "name-traversal"}},
	{"libmetalink--ubuntu-12.04-server-amd64.metalink", warns, []string{"metalink3", "hash-weak"}},
	{"librepo--metalink_bad_01.metalink", refused, []string{"metalink3", "size-invalid", "priority-invalid", "origin-dynamic",
		"hash-unknown-type", "url-empty"}},
	{"librepo--metalink_really_bad_02.metalink", unreadable, []string{"not-metalink"}}, // no namespace (and truncated)
	{"librepo--metalink_with_alternates.metalink", warns, []string{"metalink3", "origin-dynamic"}},
	{"metalink-editor--invalid.meta4", refused, []string{"size-missing", "no-hash", "name-missing"}},
	{"metalink-editor--test2.meta4", warns, []string{"size-missing", "no-hash"}},
	{"metalinks-checker--2_fail_metalink_one_file_bad_main_crc.metalink", warns, []string{"metalink3", "origin-dynamic", "generator-invalid", "hash-weak"}},
	{"metalinks-checker--3_fail_metalink_bad_piece2.metalink", warns, []string{"metalink3", "origin-dynamic", "generator-invalid", "hash-weak"}},
	{"mkmetalink--dir-pkg.meta4", warns, []string{"unknown-attribute", "unknown-element", "piece-hash-type"}},
	{"mkmetalink--rsdump-sample-1.0.zip.meta4", warns, []string{"unknown-attribute", "unknown-element", "piece-hash-type"}},
	{"rfc5854--sec1.1-example1.meta4", warns, []string{"whitespace", "no-hash"}},
	{"rfc5854--sec1.1-example2.meta4", refused, []string{"hash-malformed", "no-hash"}}, // "..." in hashes
	{"wget2--test-metalink-archiveP.meta4", unreadable, []string{"not-metalink"}},
	{"wget2-fuzz--repro-5268760606801920.xml", unreadable, []string{"not-metalink"}},
}

// sharedDir locates /work/shared relative to this package, or skips.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared")
	if _, err := os.Stat(filepath.Join(dir, "metalink", "corpus")); err != nil {
		t.Skipf("shared material not found at %s (%v); the corpus tests need it", dir, err)
	}
	return dir
}

func corpusPath(t testing.TB, name string) string {
	return filepath.Join(sharedDir(t), "metalink", "corpus", name)
}

func decodeCorpusFile(t testing.TB, name string) *Metalink {
	t.Helper()
	data, err := os.ReadFile(corpusPath(t, name))
	if err != nil {
		t.Fatal(err)
	}
	m, _, _ := Decode(bytes.NewReader(data))
	if m == nil {
		t.Fatalf("%s: no document", name)
	}
	return m
}

func asProblem(err error, p **finding.Finding) bool { return errors.As(err, p) }

func TestCorpusTableCoversCorpus(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(sharedDir(t), "metalink", "corpus", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		if filepath.Base(f) != "README.md" {
			names = append(names, filepath.Base(f))
		}
	}
	var listed []string
	for _, c := range corpusTable {
		listed = append(listed, c.file)
	}
	slices.Sort(names)
	slices.Sort(listed)
	if !slices.Equal(names, listed) || len(names) != 40 {
		t.Errorf("corpus has %d files %v,\ntable lists %d %v", len(names), names, len(listed), listed)
	}
}

func TestCorpus(t *testing.T) {
	t.Parallel()
	counts := map[outcome]int{}
	for _, c := range corpusTable {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(corpusPath(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			m, ps, err := Decode(bytes.NewReader(data))
			got, codes := classify(t, m, ps, err)
			counts[got]++
			if got != c.want {
				t.Errorf("outcome %v, want %v; problems:\n%v", got, c.want, ps)
			}
			if !sameSet(codes, c.codes) {
				t.Errorf("codes %q, want %q", codes, c.codes)
			}
		})
	}
	t.Logf("corpus: %d clean, %d with warnings, %d refused, %d unreadable",
		counts[clean], counts[warns], counts[refused], counts[unreadable])
}

// classify checks Decode's contract and returns the outcome and the
// distinct codes.
func classify(t *testing.T, m *Metalink, ps []finding.Finding, err error) (outcome, []string) {
	t.Helper()
	if m == nil {
		var p *finding.Finding
		if !asProblem(err, &p) {
			t.Fatalf("no document and error %v is not a *finding.Finding", err)
		}
		return unreadable, []string{p.Code}
	}
	if (err != nil) != finding.HasErrors(ps) {
		t.Errorf("error %v does not match problems %v", err, ps)
	}
	var codes []string
	for _, p := range ps {
		if !slices.Contains(codes, p.Code) {
			codes = append(codes, p.Code)
		}
	}
	switch {
	case err != nil:
		return refused, codes
	case len(ps) > 0:
		return warns, codes
	}
	return clean, codes
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
