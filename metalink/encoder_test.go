package metalink

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
)

// TestEncoderMatchesEncode: file by file, the Encoder writes the bytes
// Encode writes for the whole model, extensions included.
func TestEncoderMatchesEncode(t *testing.T) {
	t.Parallel()
	m := fullModel()
	second := m.Files[0]
	second.Name = "dumps/part-0002.zip"
	m.Files = append(m.Files, second)
	var want, got bytes.Buffer
	if err := Encode(&want, m); err != nil {
		t.Fatal(err)
	}
	head := *m
	head.Files = nil
	e, err := NewEncoder(&got, &head)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Files {
		if err := e.Encode(&m.Files[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() || e.Count() != len(m.Files) {
		t.Errorf("Encoder wrote %d files:\n%s\nEncode wrote:\n%s", e.Count(), got.String(), want.String())
	}
}

// TestEncoderRefuses: a file Validate rejects, or a repeated name, is not
// written, and the Encoder goes on; the document stays valid.
func TestEncoderRefuses(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	e, err := NewEncoder(&buf, &Metalink{Generator: "rsdump"})
	if err != nil {
		t.Fatal(err)
	}
	good := File{Name: "a.zip", URLs: []URL{{URL: "http://127.0.0.1/a.zip"}}}
	noSource := File{Name: "b.zip"}
	traversal := File{Name: "../c.zip", URLs: good.URLs}
	if err := e.Encode(&good); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f    File
		code string
	}{{good, CodeNameDuplicate}, {noSource, CodeNoSource}, {traversal, CodeNameTraversal}} {
		if err := e.Encode(&c.f); err == nil || !strings.Contains(err.Error(), c.code) {
			t.Errorf("Encode(%q) = %v, want %s", c.f.Name, err, c.code)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	m, ps, err := Decode(&buf)
	if err != nil || finding.HasErrors(ps) || len(m.Files) != 1 || m.Files[0].Name != "a.zip" {
		t.Errorf("decoded %v %v %v:\n%s", m, ps, err, buf.String())
	}
}

func TestEncoderEmptyAndBadHead(t *testing.T) {
	t.Parallel()
	e, err := NewEncoder(&bytes.Buffer{}, &Metalink{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err == nil || !strings.Contains(err.Error(), "at least one") {
		t.Errorf("Close with no files: %v", err)
	}
	if _, err := NewEncoder(&bytes.Buffer{}, fullModel()); err == nil {
		t.Error("NewEncoder accepted a head with files")
	}
	if _, err := NewEncoder(&bytes.Buffer{}, &Metalink{Origin: "not an iri\x01"}); err == nil {
		t.Error("NewEncoder accepted an invalid origin")
	}
}
