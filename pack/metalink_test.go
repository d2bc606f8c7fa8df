package pack

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/resourcesync"
)

// TestPackMetalink packs with --metalink and mirrors but no dump URL,
// then checks the .meta4 against the package on disk: size, whole-file
// hash, every piece hash (computed here independently), URLs and
// priorities, and the links in resourcedump.xml. The base URL names
// bitstreams only: no package URL is under it.
func TestPackMetalink(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a.bin": string(pseudoRandom(300000)), "b.txt": strings.Repeat("text ", 50000)})
	o := testOptions()
	o.Metalink = &MetalinkOptions{PieceLength: 64 << 10, Mirrors: []layout.Mirror{
		{BaseURL: "http://127.0.0.31/rs", Location: "de"},
		{BaseURL: "http://127.0.0.12/x/"},
	}}
	var notices []string
	o.Events = func(e finding.Event) {
		if n, ok := e.(finding.Note); ok {
			notices = append(notices, n.Msg)
		}
	}
	res, out := mustPack(t, src, o)
	p := res.Packages[0]
	mf := decodeMeta4(t, filepath.Join(out, p.Metalink))
	data := readFile(t, filepath.Join(out, p.Name))
	if mf.Name != p.Name || *mf.Size != int64(len(data)) {
		t.Errorf("file %s size %d, want %s %d", mf.Name, *mf.Size, p.Name, len(data))
	}
	whole := sha256.Sum256(data)
	if h, _ := mf.WholeHash("sha-256"); h != hex.EncodeToString(whole[:]) {
		t.Errorf("whole-file hash %s", h)
	}
	checkPieces(t, mf.Pieces[0], data)
	checkURLs(t, mf.URLs, []metalink.URL{
		{URL: "http://127.0.0.31/rs/" + p.Name, Priority: 1, Location: "de"},
		{URL: "http://127.0.0.12/x/" + p.Name, Priority: 2},
	})
	checkDumpLinks(t, out, p, "http://127.0.0.31/rs/", []resourcesync.Link{{Rel: "duplicate", Href: "http://127.0.0.12/x/" + p.Name, Pri: 2}})
	if res.DumpURL != "http://127.0.0.31/rs/" || len(notices) != 1 || !strings.Contains(notices[0], "first mirror, http://127.0.0.31/rs/") {
		t.Errorf("dump URL %q, notices %q: want the first mirror, said once", res.DumpURL, notices)
	}
	if dump := string(readFile(t, filepath.Join(out, layout.DumpName))); strings.Contains(dump, "http://127.0.0.1/rs/resourcedump") {
		t.Errorf("resourcedump.xml names a package URL under the base URL:\n%s", dump)
	}
}

// TestPackMetalinkDumpURL: a dump URL given comes first in each .meta4 with
// priority 1, then the mirrors in the order given, each with its priority:
// the one given, or else its position. A mirror equal to the dump URL is
// listed once.
func TestPackMetalinkDumpURL(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a.txt": "a"})
	o := testOptions()
	o.DumpURL = "http://127.0.0.20/d"
	o.Metalink = &MetalinkOptions{Mirrors: []layout.Mirror{
		{BaseURL: "http://127.0.0.31/rs"},
		{BaseURL: "http://127.0.0.20/d/", Location: "fr"},
		{BaseURL: "http://127.0.0.12/x/", Priority: 7},
		{BaseURL: "http://127.0.0.13/"},
	}}
	res, out := mustPack(t, src, o)
	p := res.Packages[0]
	checkURLs(t, decodeMeta4(t, filepath.Join(out, p.Metalink)).URLs, []metalink.URL{
		{URL: "http://127.0.0.20/d/" + p.Name, Priority: 1, Location: "fr"},
		{URL: "http://127.0.0.31/rs/" + p.Name, Priority: 2},
		{URL: "http://127.0.0.13/" + p.Name, Priority: 4},
		{URL: "http://127.0.0.12/x/" + p.Name, Priority: 7},
	})
	checkDumpLinks(t, out, p, "http://127.0.0.20/d/", []resourcesync.Link{
		{Rel: "duplicate", Href: "http://127.0.0.31/rs/" + p.Name, Pri: 2},
		{Rel: "duplicate", Href: "http://127.0.0.13/" + p.Name, Pri: 4},
		{Rel: "duplicate", Href: "http://127.0.0.12/x/" + p.Name, Pri: 7},
	})
}

// decodeMeta4 reads a package's .meta4, which must break no rule of RFC
// 5854, and returns its one file.
func decodeMeta4(t *testing.T, path string) metalink.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, problems, err := metalink.Decode(f)
	if err != nil || len(problems) > 0 {
		t.Fatalf("%s: %v %v", path, err, problems)
	}
	if len(m.Files) != 1 {
		t.Fatalf("%s: %d files, want 1", path, len(m.Files))
	}
	relaxNG(t, path)
	return m.Files[0]
}

// relaxNG validates a Metalink against metalink4.rng with xmllint, when
// both are there; unlike xmllint it does not skip the calling test.
func relaxNG(t *testing.T, path string) {
	t.Helper()
	rng := filepath.Join("..", "..", "shared", "metalink", "metalink4.rng")
	if _, err := exec.LookPath("xmllint"); err != nil {
		t.Log("xmllint not installed: metalink4.rng check skipped")
		return
	}
	if _, err := os.Stat(rng); err != nil {
		t.Logf("%s not found: metalink4.rng check skipped", rng)
		return
	}
	if out, err := exec.Command("xmllint", "--noout", "--relaxng", rng, path).CombinedOutput(); err != nil {
		t.Errorf("%s does not validate against metalink4.rng: %v\n%s", path, err, out)
	}
}

func checkURLs(t *testing.T, got, want []metalink.URL) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("Metalink URLs\n got %+v\nwant %+v", got, want)
	}
}

func checkPieces(t *testing.T, ps metalink.Pieces, data []byte) {
	t.Helper()
	n := (int64(len(data)) + ps.Length - 1) / ps.Length
	if int64(len(ps.Hashes)) != n {
		t.Fatalf("%d piece hashes, want %d", len(ps.Hashes), n)
	}
	for i, h := range ps.Hashes {
		piece := data[int64(i)*ps.Length : min(int64(len(data)), int64(i+1)*ps.Length)]
		sum := sha256.Sum256(piece)
		if h != hex.EncodeToString(sum[:]) {
			t.Errorf("piece %d hash %s, want %x", i, h, sum)
		}
	}
}

// checkDumpLinks checks the package's entry in resourcedump.xml: its
// <loc> under dumpURL, its manifest, the mirrors other than the <loc> as
// rel="duplicate" links with pri, and its Metalink; and that the document
// validates against the ResourceSync schema.
func checkDumpLinks(t *testing.T, out string, p PackageInfo, dumpURL string, dups []resourcesync.Link) {
	t.Helper()
	f, _ := os.Open(filepath.Join(out, layout.DumpName))
	defer f.Close()
	_, urls := decodeAll(t, f)
	u := urls[0]
	if u.Loc != dumpURL+p.Name {
		t.Errorf("<loc> %s, want %s", u.Loc, dumpURL+p.Name)
	}
	var got []resourcesync.Link
	for _, l := range u.Links {
		if l.Rel == "duplicate" {
			got = append(got, resourcesync.Link{Rel: l.Rel, Href: l.Href, Pri: l.Pri})
		}
	}
	if !slices.Equal(got, dups) {
		t.Errorf("duplicates\n got %+v\nwant %+v", got, dups)
	}
	if l, _ := u.Link("contents"); l.Href != dumpURL+p.Manifest {
		t.Errorf("contents %+v", l)
	}
	if l, _ := u.Link("describedby"); l.Href != dumpURL+p.Metalink || l.Type != metalink.MediaType {
		t.Errorf("describedby %+v", l)
	}
	xmllint(t, filepath.Join(out, layout.DumpName), urlsetSchema)
}

// TestPackMetalinkPieceLanes: piece hashes stay right when a large
// streamed file is cut off the package again (--skip-changed), whichever
// way the pieces are split between the package lane and the piece lane
// (pickDual, and each way forced), also with a piece length that is not a
// multiple of the sha-256 block; each is checked against the package on
// disk, as is the package hash.
func TestPackMetalinkPieceLanes(t *testing.T) {
	defer func(f func(int, int) bool) { pickDual = f }(pickDual)
	var n int
	r := rand.New(rand.NewPCG(7, 7))
	modes := map[string]func(int, int) bool{
		"auto":      pickDual,
		"dual":      func(int, int) bool { return true },
		"solo":      func(int, int) bool { return false },
		"alternate": func(int, int) bool { n++; return n%2 == 0 },
		"random":    func(int, int) bool { return r.IntN(2) == 0 },
	}
	for name, mode := range modes {
		for _, plen := range []int64{32 << 10, 10_007} {
			t.Run(fmt.Sprintf("%s/%d", name, plen), func(t *testing.T) {
				pickDual = mode
				src := tree(t, map[string]string{"a.txt": "a", "grows.bin": string(pseudoRandom(smallMax + 1)),
					"m.bin": string(pseudoRandom(200_000)), "z.bin": string(pseudoRandom(smallMax + 70_000))})
				defer setHook(func(rel string) {
					if rel == "grows.bin" {
						f, _ := os.OpenFile(filepath.Join(src, rel), os.O_APPEND|os.O_WRONLY, 0)
						f.WriteString("more")
						f.Close()
					}
				})()
				o := testOptions()
				o.SkipChanged = true
				o.Metalink = &MetalinkOptions{PieceLength: plen}
				res, out := mustPack(t, src, o)
				p := res.Packages[0]
				f, _ := os.Open(filepath.Join(out, p.Metalink))
				defer f.Close()
				m, _, err := metalink.Decode(f)
				if err != nil {
					t.Fatal(err)
				}
				data := readFile(t, filepath.Join(out, p.Name))
				checkPieces(t, m.Files[0].Pieces[0], data)
				if h, _ := m.Files[0].WholeHash("sha-256"); h != fmt.Sprintf("%x", sha256.Sum256(data)) {
					t.Errorf("whole hash %s is not the package's", h)
				}
			})
		}
	}
}

// TestPackMetalinkNoPlace: with neither a dump URL nor a mirror, the
// .meta4 can only give the base URL, and Pack says so.
func TestPackMetalinkNoPlace(t *testing.T) {
	t.Parallel()
	o := testOptions()
	o.Metalink = &MetalinkOptions{}
	var notices []string
	o.Events = func(e finding.Event) {
		if n, ok := e.(finding.Note); ok {
			notices = append(notices, n.Msg)
		}
	}
	res, out := mustPack(t, tree(t, map[string]string{"a.txt": "a"}), o)
	p := res.Packages[0]
	checkURLs(t, decodeMeta4(t, filepath.Join(out, p.Metalink)).URLs, []metalink.URL{{URL: "http://127.0.0.1/rs/" + p.Name, Priority: 1}})
	if len(notices) != 1 || !strings.Contains(notices[0], "--dump-url or --mirror") {
		t.Errorf("notices %q", notices)
	}
	o.Metalink, notices = nil, nil
	mustPack(t, tree(t, map[string]string{"a.txt": "a"}), o)
	if len(notices) != 0 {
		t.Errorf("notices without --metalink: %q", notices)
	}
}
