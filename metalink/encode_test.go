package metalink

import (
	"bytes"
	"encoding/xml"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
)

var update = flag.Bool("update", false, "rewrite testdata/full.meta4")

const rsNS = "https://rsdump.example/ns/1"

func ptr[T any](v T) *T { return &v }

// fullModel uses every element and attribute of RFC 5854 and extensions
// with nesting, mixed content, namespaced attributes and no namespace.
func fullModel() *Metalink {
	return &Metalink{
		Generator: "rsdump/0.1",
		Origin:    "https://127.0.0.1/dump.meta4",
		Dynamic:   ptr(true),
		Published: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		Updated:   time.Date(2024, 2, 3, 4, 5, 6, 250_000_000, time.UTC),
		Files: []File{{
			Name: "dumps/part-0001.zip",
			Size: ptr(int64(786430)),
			Hashes: []Hash{
				{"sha-256", strings.Repeat("ab", 32)},
				{"md5", strings.Repeat("0f", 16)},
			},
			Pieces: []Pieces{
				{Type: "sha-256", Length: 262144, Hashes: []string{strings.Repeat("01", 32), strings.Repeat("02", 32), strings.Repeat("03", 32)}},
				{Type: "sha-1", Length: 524288, Hashes: []string{strings.Repeat("a1", 20), strings.Repeat("a2", 20)}},
			},
			URLs: []URL{
				{URL: "https://127.0.0.22/part-0001.zip?x=1&y=2", Location: "de", Priority: 1},
				{URL: "ftp://127.0.0.23/part-0001.zip"},
			},
			MetaURLs:    []MetaURL{{URL: "https://127.0.0.1/p.torrent", MediaType: "torrent", Name: "dumps/part-0001.zip", Priority: 2}},
			Copyright:   "© 2024 Example & Co <legal>",
			Description: "\n  A description with\r\nline breaks, tabs\tand \"quotes\" ]]>\n",
			Identity:    "Example",
			Version:     "1.0",
			Logo:        "https://127.0.0.1/logo.png",
			Languages:   []string{"en", "de-CH"},
			OS:          []string{"Linux-x86", "Windows"},
			Publisher:   &Publisher{Name: "Example Archive", URL: "https://127.0.0.1/"},
			Signature: &Signature{MediaType: "application/pgp-signature",
				Value: "\n-----BEGIN PGP SIGNATURE-----\n\niQIcBAABAgAGBQJP\n=bzA1\n-----END PGP SIGNATURE-----\n"},
			Extensions: []Extension{
				{
					Name: xml.Name{Space: rsNS, Local: "member"},
					Attrs: []xml.Attr{
						{Name: xml.Name{Local: "path"}, Value: "a/b.txt"},
						{Name: xml.Name{Space: xmlNamespace, Local: "lang"}, Value: "en"},
						{Name: xml.Name{Space: "urn:other", Local: "flag"}, Value: "1\n2\t\"3\""},
					},
					Children: []Extension{
						{Name: xml.Name{Space: rsNS, Local: "mtime"}, Text: "2024-01-01T00:00:00Z"},
						{Text: " mixed & text "},
						{Name: xml.Name{Space: "urn:other", Local: "x"}, Children: []Extension{
							{Name: xml.Name{Local: "plain"}, Text: "no namespace"},
						}},
					},
				},
				{Name: xml.Name{Space: rsNS, Local: "simple"}, Text: "  value with spaces  "},
				{Name: xml.Name{Space: rsNS, Local: "empty"}},
			},
		}, {
			Name:   "empty.txt",
			Size:   ptr(int64(0)),
			Hashes: []Hash{{"sha-256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}},
			Pieces: []Pieces{{Type: "sha-256", Length: 262144,
				Hashes: []string{"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}}},
			URLs: []URL{{URL: "https://127.0.0.1/empty.txt", Location: "FR", Priority: 999999}},
		}},
		Extensions: []Extension{{Name: xml.Name{Space: rsNS, Local: "dump"},
			Attrs: []xml.Attr{{Name: xml.Name{Local: "capability"}, Value: "resourcedump"}}}},
	}
}

func encode(t testing.TB, m *Metalink) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(&buf, m); err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return buf.Bytes()
}

func TestFullModelIsValid(t *testing.T) {
	t.Parallel()
	if ps := fullModel().Validate(); len(ps) != 0 {
		t.Fatalf("the reference model has problems: %v", ps)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	want := fullModel()
	got, ps, err := Decode(bytes.NewReader(encode(t, want)))
	if err != nil || len(ps) != 0 {
		t.Fatalf("Decode: %v, problems %v", err, ps)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the model\n got: %+v\nwant: %+v", got, want)
	}
}

// TestEncodeGolden pins the exact bytes, so that output stays
// deterministic and reviewable; run with -update after a deliberate change.
func TestEncodeGolden(t *testing.T) {
	t.Parallel()
	out := encode(t, fullModel())
	if !bytes.Equal(out, encode(t, fullModel())) {
		t.Fatal("two encodings of the same model differ")
	}
	golden := filepath.Join("testdata", "full.meta4")
	if *update {
		if err := os.WriteFile(golden, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("Encode output differs from %s (run go test -update to accept):\n%s", golden, out)
	}
}

func TestEncodeShape(t *testing.T) {
	t.Parallel()
	out := string(encode(t, fullModel()))
	if n := strings.Count(out, Namespace); n != 1 {
		t.Errorf("metalink namespace written %d times, want once", n)
	}
	if !strings.Contains(out, `<metalink xmlns="`+Namespace+`">`) {
		t.Error("root does not declare the default namespace")
	}
	if strings.Contains(strings.ReplaceAll(out, ` xmlns=""`, ""), `=""`) {
		t.Error("output has an empty attribute (other than a no-namespace undeclaration)")
	}
	for _, bad := range []string{"<metalink:", "<ns1:", "<m:"} {
		if strings.Contains(out, bad) {
			t.Errorf("output uses an element prefix %q", bad)
		}
	}
	for _, want := range []string{
		"<published>2024-01-02T03:04:05Z</published>",
		"<updated>2024-02-03T04:05:06.25Z</updated>",
		"<description>\n  A description with&#xD;\nline breaks",
		`<url location="de" priority="1">https://127.0.0.22/part-0001.zip?x=1&amp;y=2</url>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestEncodeRefusesInvalid(t *testing.T) {
	t.Parallel()
	m := fullModel()
	m.Files[0].Name = "../escape.zip"
	var buf bytes.Buffer
	err := Encode(&buf, m)
	var p *finding.Finding
	if err == nil || !asProblem(err, &p) || p.Code != CodeNameTraversal {
		t.Fatalf("Encode = %v, want a %s problem", err, CodeNameTraversal)
	}
	if buf.Len() != 0 {
		t.Errorf("Encode wrote %d bytes for a refused model", buf.Len())
	}
	if err := Encode(&buf, nil); err == nil {
		t.Error("Encode(nil) succeeded")
	}
}

// TestEncodeSchema checks Encode output with a RELAX NG validator: the
// reference model and every corpus document that decodes without errors.
func TestEncodeSchema(t *testing.T) {
	t.Parallel()
	validate := schemaValidator(t)
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "full.meta4")}
	if err := os.WriteFile(paths[0], encode(t, fullModel()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range corpusTable {
		if c.want != clean && c.want != warns {
			continue
		}
		m := decodeCorpusFile(t, c.file)
		p := filepath.Join(dir, c.file+".meta4")
		if err := os.WriteFile(p, encode(t, m), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	validate(paths)
}

// schemaValidator returns a function that validates files against
// metalink4.rng with jing or xmllint, or skips the test if neither exists.
func schemaValidator(t *testing.T) func([]string) {
	rng := filepath.Join(sharedDir(t), "metalink", "metalink4.rng")
	var name string
	var args []string
	if p, err := exec.LookPath("jing"); err == nil {
		name, args = p, []string{rng}
	} else if p, err := exec.LookPath("xmllint"); err == nil {
		name, args = p, []string{"--noout", "--relaxng", rng}
	} else {
		t.Skip("neither jing nor xmllint is on PATH; install jing or libxml2-utils to check Encode output against metalink4.rng")
	}
	return func(files []string) {
		t.Helper()
		out, err := exec.Command(name, append(args, files...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s rejects Encode output: %v\n%s", filepath.Base(name), err, out)
		}
		t.Logf("%s accepted %d documents", filepath.Base(name), len(files))
	}
}
