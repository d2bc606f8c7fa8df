package pack

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/sign"
	"github.com/rsdump/rsdump/sign/signtest"
)

// TestSignedChanges: a signed pack and then signed --changes runs (Change
// List and Change Dump indexes and their parts, the Resource List written
// again, detached manifests) leave every document with a signature that
// verifies over it, and no signature without its document.
func TestSignedChanges(t *testing.T) {
	t.Parallel()
	key := signtest.NewKey(t, "source")
	signer, err := sign.LoadSigner(key.Secret, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := sign.LoadKeyring(key.Public)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"a.txt": "one", "b/c.txt": strings.Repeat("two", 30000), "d.txt": "three"}
	src := tree(t, files)
	out := t.TempDir()
	o := testOptions()
	o.Signer, o.SourceDescription, o.Metalink = signer, true, &MetalinkOptions{}
	o.MaxPackageSize = 64 << 10
	if _, err := Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	for i, change := range []func(){
		func() { os.WriteFile(filepath.Join(src, "a.txt"), []byte("one, changed"), 0o644) },
		func() { os.Remove(filepath.Join(src, "d.txt")) },
	} {
		change()
		when := fixedTime.Add(time.Duration(i+1) * time.Hour)
		os.Chtimes(filepath.Join(src, "a.txt"), when, when)
		c := o
		c.Changes, c.At = true, when
		if _, err := Pack(context.Background(), src, out, c); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(out, p)
		rel = filepath.ToSlash(rel)
		switch {
		case err != nil || !d.Type().IsRegular():
		case layout.IsDocument(rel):
			n++
			sig, err := os.ReadFile(p + sign.Suffix)
			if err != nil {
				t.Errorf("%s: no signature: %v", rel, err)
				return nil
			}
			doc, _ := os.ReadFile(p)
			if _, err := ring.Verify(bytes.NewReader(doc), sig); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
		case strings.HasSuffix(rel, sign.Suffix):
			if _, err := os.Stat(strings.TrimSuffix(p, sign.Suffix)); err != nil {
				t.Errorf("%s: a signature without its document", rel)
			}
		}
		return nil
	})
	for _, name := range []string{layout.ChangeListName, layout.ChangeDumpName, "changelist-part00002.xml", "changedump-part00002.xml", "changedump-00002.manifest.xml"} {
		if _, err := os.Stat(filepath.Join(out, name+sign.Suffix)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n < 12 {
		t.Errorf("only %d documents", n)
	}
}

// TestPruneTakesSignatures: --prune removes a stale document's signature
// with it, and never leaves a signature without its document.
func TestPruneTakesSignatures(t *testing.T) {
	t.Parallel()
	key := signtest.NewKey(t, "source")
	signer, err := sign.LoadSigner(key.Secret, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"a.bin": strings.Repeat("a", 50000), "b.bin": strings.Repeat("b", 50000), "c.bin": strings.Repeat("c", 50000)}
	src := tree(t, files)
	o := testOptions()
	o.Signer, o.MaxPackageSize, o.Prune = signer, 64<<10, true
	_, out := mustPack(t, src, o)
	stale := filepath.Join(out, "resourcedump-00003.manifest.xml"+sign.Suffix)
	if _, err := os.Stat(stale); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(src, "c.bin"))
	if _, err := Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale manifest's signature stayed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "resourcedump-00002.manifest.xml"+sign.Suffix)); err != nil {
		t.Errorf("a kept manifest's signature: %v", err)
	}
}

// TestSignDir: rsdump sign's library signs, in an output packed without a
// signer, every document (found by its content: a sitemap renamed .txt
// too, a page that is none is left alone) and every package in its
// .meta4, each signature verifying over its bytes.
func TestSignDir(t *testing.T) {
	t.Parallel()
	key := signtest.NewKey(t, "source")
	signer, err := sign.LoadSigner(key.Secret, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := sign.LoadKeyring(key.Public)
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions()
	o.SourceDescription, o.Metalink, o.MaxPackageSize = true, &MetalinkOptions{}, 64<<10
	_, out := mustPack(t, tree(t, map[string]string{"a.bin": strings.Repeat("a", 50000), "b.bin": strings.Repeat("b", 50000)}), o)
	list, _ := os.ReadFile(filepath.Join(out, layout.ResourceListName))
	os.WriteFile(filepath.Join(out, "list-renamed.txt"), list, 0o644)
	os.WriteFile(filepath.Join(out, "page.html"), []byte("<html><body>not a sitemap</body></html>"), 0o644)
	res, err := SignDir(context.Background(), out, signer)
	if err != nil {
		t.Fatal(err)
	}
	check := func(doc string, sig []byte) {
		t.Helper()
		b, _ := os.ReadFile(doc)
		if _, err := ring.Verify(bytes.NewReader(b), sig); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
	for _, d := range res.Documents {
		sig, _ := os.ReadFile(d + sign.Suffix)
		check(d, sig)
	}
	want := []string{layout.DumpName, layout.ResourceListName, layout.CapabilityListName, layout.SourceDescriptionName, "resourcedump-00001.manifest.xml", "list-renamed.txt"}
	for _, name := range want {
		if _, err := os.Stat(filepath.Join(out, name+sign.Suffix)); err != nil {
			t.Errorf("%s: not signed", name)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "page.html"+sign.Suffix)); err == nil {
		t.Error("an HTML page was signed")
	}
	if len(res.Metalinks) != 2 {
		t.Fatalf("Metalinks signed: %v", res.Metalinks)
	}
	for _, m := range res.Metalinks {
		f, _ := os.Open(m)
		ml, _, err := metalink.Decode(f)
		f.Close()
		if err != nil || ml.Files[0].Signature == nil || ml.Files[0].Signature.MediaType != sign.MediaType {
			t.Fatalf("%s: %v, %+v", m, err, ml)
		}
		check(strings.TrimSuffix(m, ".meta4"), []byte(ml.Files[0].Signature.Value))
	}
}
