package pack

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/metalink"
)

// TestPackMetalink packs with --metalink and mirrors, then checks the
// .meta4 against the package on disk: size, whole-file hash, every piece
// hash (computed here independently), URLs and priorities, and the links
// in resourcedump.xml.
func TestPackMetalink(t *testing.T) {
	src := tree(t, map[string]string{"a.bin": string(pseudoRandom(300000)), "b.txt": strings.Repeat("text ", 50000)})
	o := testOptions()
	o.Metalink = &MetalinkOptions{PieceLength: 64 << 10, Mirrors: []Mirror{
		{BaseURL: "http://m1.example.net/rs", Priority: 2, Location: "de"},
		{BaseURL: "http://m2.example.org/x/"},
	}}
	res, out := mustPack(t, src, o)
	p := res.Packages[0]
	f, err := os.Open(filepath.Join(out, p.Metalink))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, problems, err := metalink.Decode(f)
	if err != nil || len(problems) > 0 {
		t.Fatalf("decode: %v %v", err, problems)
	}
	mf := m.Files[0]
	data := readFile(t, filepath.Join(out, p.Name))
	if mf.Name != p.Name || *mf.Size != int64(len(data)) {
		t.Errorf("file %s size %d, want %s %d", mf.Name, *mf.Size, p.Name, len(data))
	}
	whole := sha256.Sum256(data)
	if h, _ := mf.WholeHash("sha-256"); h != hex.EncodeToString(whole[:]) {
		t.Errorf("whole-file hash %s", h)
	}
	checkPieces(t, mf.Pieces[0], data)
	want := []string{"http://example.org/rs/" + p.Name, "http://m1.example.net/rs/" + p.Name, "http://m2.example.org/x/" + p.Name}
	for i, u := range mf.URLs {
		if u.URL != want[i] {
			t.Errorf("url %d = %s, want %s", i, u.URL, want[i])
		}
	}
	if mf.URLs[1].Priority != 2 || mf.URLs[1].Location != "de" {
		t.Errorf("mirror 1: %+v", mf.URLs[1])
	}
	checkDumpLinks(t, out, p)
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

func checkDumpLinks(t *testing.T, out string, p PackageInfo) {
	t.Helper()
	f, _ := os.Open(filepath.Join(out, DumpName))
	defer f.Close()
	_, urls := decodeAll(t, f)
	var rels []string
	for _, l := range urls[0].Links {
		rels = append(rels, l.Rel)
	}
	if strings.Join(rels, " ") != "contents duplicate duplicate describedby" {
		t.Errorf("links %v", rels)
	}
	if l, _ := urls[0].Link("duplicate"); l.Pri != 2 || l.Href != "http://m1.example.net/rs/"+p.Name {
		t.Errorf("first duplicate %+v", l)
	}
	if l, _ := urls[0].Link("describedby"); l.Href != "http://example.org/rs/"+p.Metalink || l.Type != metalink.MediaType {
		t.Errorf("describedby %+v", l)
	}
	xmllint(t, filepath.Join(out, DumpName), "rs-urlset.xsd")
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
