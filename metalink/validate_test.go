package metalink

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
)

var (
	hex64 = strings.Repeat("5a", 32)
	hex32 = strings.Repeat("c3", 16)
)

// validModel is a small document with no problems at all.
func validModel() *Metalink {
	return &Metalink{Files: []File{{
		Name:   "dir/pkg.zip",
		Size:   ptr(int64(600000)),
		Hashes: []Hash{{"sha-256", hex64}},
		Pieces: []Pieces{{Type: "sha-256", Length: 262144, Hashes: []string{hex64, hex64, hex64}}},
		URLs:   []URL{{URL: "https://127.0.0.21/pkg.zip", Location: "de", Priority: 1}},
	}}}
}

func TestValidModelHasNoProblems(t *testing.T) {
	t.Parallel()
	if ps := validModel().Validate(); len(ps) != 0 {
		t.Fatalf("problems: %v", ps)
	}
}

// TestValidateRules applies one change per rule to validModel and expects
// that rule's code with its severity; a warning rule must not produce
// any error.
func TestValidateRules(t *testing.T) {
	t.Parallel()
	f0 := func(fn func(f *File)) func(*Metalink) { return func(m *Metalink) { fn(&m.Files[0]) } }
	second := func(name string) func(*Metalink) {
		return func(m *Metalink) { c := m.Files[0]; c.Name = name; m.Files = append(m.Files, c) }
	}
	tests := []struct {
		name   string
		change func(*Metalink)
		code   string
		sev    finding.Severity
	}{
		{"no files", func(m *Metalink) { m.Files = nil }, CodeNoFiles, finding.Error},
		{"empty name", f0(func(f *File) { f.Name = "" }), CodeNameMissing, finding.Error},
		{"parent dir", f0(func(f *File) { f.Name = "../x" }), CodeNameTraversal, finding.Error},
		{"absolute", f0(func(f *File) { f.Name = "/etc/x" }), CodeNameTraversal, finding.Error},
		{"inner dotdot", f0(func(f *File) { f.Name = "a/../../x" }), CodeNameTraversal, finding.Error},
		{"trailing dotdot", f0(func(f *File) { f.Name = "a/.." }), CodeNameTraversal, finding.Error},
		{"dot segment", f0(func(f *File) { f.Name = "./x" }), CodeNameTraversal, finding.Error},
		{"backslash", f0(func(f *File) { f.Name = `..\..\x` }), CodeNameTraversal, finding.Error},
		{"backslash only", f0(func(f *File) { f.Name = `dir\x` }), CodeNameTraversal, finding.Error},
		{"drive letter", f0(func(f *File) { f.Name = "C:x" }), CodeNameTraversal, finding.Error},
		{"home dir", f0(func(f *File) { f.Name = "~/x" }), CodeNameTraversal, finding.Error},
		{"empty segment", f0(func(f *File) { f.Name = "a//b" }), CodeNameInvalid, finding.Error},
		{"trailing slash", f0(func(f *File) { f.Name = "a/" }), CodeNameInvalid, finding.Error},
		{"control char", f0(func(f *File) { f.Name = "a\nb" }), CodeNameInvalid, finding.Error},
		{"hidden", f0(func(f *File) { f.Name = "log/.x" }), CodeNameQuestionable, finding.Warning},
		{"shell char", f0(func(f *File) { f.Name = "x |/dev/null" }), CodeNameQuestionable, finding.Warning},
		{"device name", f0(func(f *File) { f.Name = "dir/CON.txt" }), CodeNameQuestionable, finding.Warning},
		{"duplicate name", second("dir/pkg.zip"), CodeNameDuplicate, finding.Error},
		{"case duplicate", second("DIR/pkg.zip"), CodeNameCaseDuplicate, finding.Warning},
		{"no source", f0(func(f *File) { f.URLs = nil }), CodeNoSource, finding.Error},
		{"metaurl is a source", f0(func(f *File) {
			f.URLs = nil
			f.MetaURLs = []MetaURL{{URL: "https://x.example/t.torrent", MediaType: "torrent"}}
		}), "", finding.Warning},
		{"no size", f0(func(f *File) { f.Size = nil }), CodeSizeMissing, finding.Warning},
		{"negative size", f0(func(f *File) { f.Size = ptr(int64(-1)) }), CodeSizeInvalid, finding.Error},
		{"hash without type", f0(func(f *File) { f.Hashes[0].Type = "" }), CodeHashNoType, finding.Error},
		{"unknown hash type", f0(func(f *File) { f.Hashes = append(f.Hashes, Hash{"sha3-256", "x"}) }), CodeHashUnknownType, finding.Warning},
		{"short hash", f0(func(f *File) { f.Hashes[0].Value = hex64[:63] }), CodeHashMalformed, finding.Error},
		{"non-hex hash", f0(func(f *File) { f.Hashes[0].Value = hex64[:60] + "...." }), CodeHashMalformed, finding.Error},
		{"upper-case hash", f0(func(f *File) { f.Hashes[0].Value = strings.ToUpper(hex64) }), CodeHashUppercase, finding.Warning},
		{"conflicting hashes", f0(func(f *File) { f.Hashes = append(f.Hashes, Hash{"sha-256", strings.Repeat("00", 32)}) }), CodeHashConflict, finding.Error},
		{"repeated hash", f0(func(f *File) { f.Hashes = append(f.Hashes, f.Hashes[0]) }), CodeDuplicate, finding.Warning},
		{"weak hash only", f0(func(f *File) { f.Hashes = []Hash{{"md5", hex32}} }), CodeHashWeak, finding.Warning},
		{"no hash", f0(func(f *File) { f.Hashes, f.Pieces = nil, nil }), CodeNoHash, finding.Warning},
		{"pieces without type", f0(func(f *File) { f.Pieces[0].Type = "" }), CodePiecesType, finding.Error},
		{"pieces length 0", f0(func(f *File) { f.Pieces[0].Length = 0 }), CodePiecesLength, finding.Error},
		{"pieces without hashes", f0(func(f *File) { f.Pieces[0].Hashes = nil }), CodePiecesEmpty, finding.Error},
		{"too few pieces", f0(func(f *File) { f.Pieces[0].Hashes = f.Pieces[0].Hashes[:2] }), CodePiecesCount, finding.Error},
		{"too many pieces", f0(func(f *File) { f.Pieces[0].Hashes = append(f.Pieces[0].Hashes, hex64) }), CodePiecesCount, finding.Error},
		{"exact multiple", f0(func(f *File) { f.Size = ptr(int64(3 * 262144)) }), "", finding.Warning},
		{"one byte over", f0(func(f *File) { f.Size = ptr(int64(3*262144 + 1)) }), CodePiecesCount, finding.Error},
		{"malformed piece hash", f0(func(f *File) { f.Pieces[0].Hashes[1] = "zz" }), CodeHashMalformed, finding.Error},
		{"duplicate pieces type", f0(func(f *File) { f.Pieces = append(f.Pieces, f.Pieces[0]) }), CodePiecesDuplicate, finding.Error},
		{"pieces without size", f0(func(f *File) { f.Size = nil }), CodePiecesNoSize, finding.Warning},
		{"priority too big", f0(func(f *File) { f.URLs[0].Priority = 1000000 }), CodePriorityInvalid, finding.Error},
		{"priority negative", f0(func(f *File) { f.URLs[0].Priority = -1 }), CodePriorityInvalid, finding.Error},
		{"location of 3 letters", f0(func(f *File) { f.URLs[0].Location = "deu" }), CodeLocationInvalid, finding.Error},
		{"location with a digit", f0(func(f *File) { f.URLs[0].Location = "d1" }), CodeLocationInvalid, finding.Error},
		{"empty url", f0(func(f *File) { f.URLs[0].URL = "" }), CodeURLEmpty, finding.Warning},
		{"url with a space", f0(func(f *File) { f.URLs[0].URL = "http://a.example/b c" }), CodeURLInvalid, finding.Warning},
		{"url with whitespace around", f0(func(f *File) { f.URLs[0].URL = " http://a.example/b" }), CodeURLInvalid, finding.Warning},
		{"relative url", f0(func(f *File) { f.URLs[0].URL = "pkg.zip" }), CodeURLRelative, finding.Warning},
		{"metaurl without mediatype", f0(func(f *File) { f.MetaURLs = []MetaURL{{URL: "https://x.example/t"}} }), CodeMetaURLMediaType, finding.Error},
		{"metaurl x-bittorrent", f0(func(f *File) {
			f.MetaURLs = []MetaURL{{URL: "https://x.example/t", MediaType: "application/x-bittorrent"}}
		}), CodeMetaURLMediaType, finding.Warning},
		{"metaurl name traversal", f0(func(f *File) {
			f.MetaURLs = []MetaURL{{URL: "https://x.example/t", MediaType: "torrent", Name: "../foo"}}
		}), CodeNameTraversal, finding.Error},
		{"publisher without name", f0(func(f *File) { f.Publisher = &Publisher{URL: "https://x.example/"} }), CodePublisherName, finding.Error},
		{"signature without mediatype", f0(func(f *File) { f.Signature = &Signature{Value: "sig"} }), CodeSignatureMedia, finding.Error},
		{"signature bad mediatype", f0(func(f *File) { f.Signature = &Signature{MediaType: "pgp", Value: "sig"} }), CodeSignatureMedia, finding.Warning},
		{"language", f0(func(f *File) { f.Languages = []string{"en_US"} }), CodeLanguageInvalid, finding.Warning},
		{"logo with a space", f0(func(f *File) { f.Logo = "http://x.example/a b.png" }), CodeIRIInvalid, finding.Warning},
		{"generator", func(m *Metalink) { m.Generator = "my generator 1.0" }, CodeGeneratorInvalid, finding.Warning},
		{"dynamic without origin", func(m *Metalink) { m.Dynamic = ptr(true) }, CodeOriginMissing, finding.Error},
		{"relative origin", func(m *Metalink) { m.Origin = "dump.meta4" }, CodeIRIInvalid, finding.Warning},
		{"date beyond 9999", func(m *Metalink) { m.Published = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, CodeDateInvalid, finding.Error},
		{"extension in metalink namespace", func(m *Metalink) {
			m.Extensions = []Extension{{Name: xml.Name{Space: Namespace, Local: "x"}}}
		}, CodeExtensionInvalid, finding.Error},
		{"extension with a bad name", f0(func(f *File) {
			f.Extensions = []Extension{{Name: xml.Name{Space: rsNS, Local: "a b"}}}
		}), CodeExtensionInvalid, finding.Error},
		{"no-namespace extension", f0(func(f *File) { f.Extensions = []Extension{{Name: xml.Name{Local: "x"}}} }), "", finding.Warning},
		{"character XML cannot carry", f0(func(f *File) { f.Description = "bell\a" }), CodeXMLChar, finding.Error},
		{"name XML cannot carry", f0(func(f *File) { f.Name = "a\uFFFEb" }), CodeNameInvalid, finding.Error},
		{"hash type XML cannot carry", f0(func(f *File) { f.Hashes = append(f.Hashes, Hash{"x\uFFFF", "1"}) }), CodeXMLChar, finding.Error},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validModel()
			tt.change(m)
			ps := m.Validate()
			if tt.code == "" {
				if len(ps) != 0 {
					t.Fatalf("want no problems, got %v", ps)
				}
				return
			}
			if !hasProblem(ps, tt.code, tt.sev) {
				t.Errorf("want %s %s, got %v", tt.sev, tt.code, ps)
			}
			if tt.sev == finding.Warning && finding.HasErrors(ps) {
				t.Errorf("a warning rule produced errors: %v", ps)
			}
		})
	}
}

func hasProblem(ps []finding.Finding, code string, sev finding.Severity) bool {
	for _, p := range ps {
		if p.Code == code && p.Severity == sev {
			return true
		}
	}
	return false
}

// hasCode reports whether a finding has the code.
func hasCode(ps []finding.Finding, code string) bool {
	for _, p := range ps {
		if p.Code == code {
			return true
		}
	}
	return false
}

func TestCheckName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"pkg.zip": "", "a/b/c.zip": "", "log/.hidden": "", "~tmp": "",
		"": CodeNameMissing, "../x": CodeNameTraversal, `a\b`: CodeNameTraversal, "a/./b": CodeNameTraversal,
		"~/x": CodeNameTraversal, "c:/x": CodeNameTraversal, "a\x00b": CodeNameInvalid,
		strings.Repeat("x", 256): CodeNameInvalid,
	} {
		err := CheckName(name)
		var p *finding.Finding
		switch {
		case want == "" && err != nil:
			t.Errorf("CheckName(%q) = %v, want nil", name, err)
		case want != "" && (!asProblem(err, &p) || p.Code != want):
			t.Errorf("CheckName(%q) = %v, want %s", name, err, want)
		}
	}
}

func TestProblemCap(t *testing.T) {
	t.Parallel()
	m := validModel()
	for i := range 3000 {
		m.Files[0].URLs = append(m.Files[0].URLs, URL{URL: "rel", Priority: i%2*2000000 + 1})
	}
	ps := m.Validate()
	if len(ps) > 2*maxProblems+1 {
		t.Errorf("%d problems, want at most %d", len(ps), 2*maxProblems+1)
	}
	last := ps[len(ps)-1]
	if last.Code != CodeTooManyProblems || last.Severity != finding.Error {
		t.Errorf("last problem %v, want an error %s", last, CodeTooManyProblems)
	}
}
