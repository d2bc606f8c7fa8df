package pack

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestGoldenExample(t *testing.T) {
	t.Parallel()
	src := copyExample(t)
	_, out := mustPack(t, src, testOptions())
	got := readFile(t, filepath.Join(out, "resourcedump-00001.manifest.xml"))
	golden := filepath.Join("..", "testdata", "golden", "example.manifest.xml")
	if *update {
		os.MkdirAll(filepath.Dir(golden), 0o755)
		os.WriteFile(golden, got, 0o644)
	}
	if want := readFile(t, golden); !bytes.Equal(got, want) {
		t.Errorf("manifest differs from %s (run with -update after checking the diff)\ngot:\n%s", golden, got)
	}
}

func TestRoundTripAndSchema(t *testing.T) {
	t.Parallel()
	src := copyExample(t)
	o := testOptions()
	o.CapabilityList = "http://127.0.0.1/rs/capabilitylist.xml"
	res, out := mustPack(t, src, o)
	if len(res.Packages) != 1 || res.Bitstreams != 9 {
		t.Fatalf("%d packages, %d bitstreams; want 1, 9", len(res.Packages), res.Bitstreams)
	}
	urls := checkPackage(t, filepath.Join(out, res.Packages[0].Name))
	for _, u := range urls {
		if !strings.HasPrefix(u.MD.Path, "/resources/") {
			t.Errorf("path %q lacks /resources/", u.MD.Path)
		}
	}
	checkDump(t, out, res)
	xmllint(t, filepath.Join(out, "resourcedump-00001.manifest.xml"), urlsetSchema)
	xmllint(t, filepath.Join(out, layout.DumpName), urlsetSchema)
}

// checkDump checks resourcedump.xml against the packages on disk.
func checkDump(t *testing.T, out string, res *Result) {
	t.Helper()
	f, err := os.Open(filepath.Join(out, layout.DumpName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, urls := decodeAll(t, f)
	if h.MD.Capability != resourcesync.CapResourceDump || h.MD.At.IsZero() || h.MD.Completed.IsZero() {
		t.Errorf("dump header %+v", h.MD)
	}
	if len(urls) != len(res.Packages) {
		t.Fatalf("dump lists %d packages, want %d", len(urls), len(res.Packages))
	}
	for i, u := range urls {
		p := res.Packages[i]
		n, sum, err := hashFile(filepath.Join(out, p.Name))
		if err != nil || u.MD.Hash != "sha-256:"+sum || *u.MD.Length != n || u.MD.Type != "application/zip" {
			t.Errorf("%s: dump entry %+v, file has %d bytes sha-256 %s (%v)", p.Name, *u.MD, n, sum, err)
		}
		if l, ok := u.Link("contents"); !ok || l.Href != "http://127.0.0.1/rs/"+p.Manifest {
			t.Errorf("%s: contents link %+v", p.Name, l)
		}
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	src := copyExample(t)
	_, out1 := mustPack(t, src, testOptions())
	_, out2 := mustPack(t, src, testOptions())
	for _, name := range []string{"resourcedump-00001.zip", "resourcedump-00001.manifest.xml", layout.DumpName} {
		if !bytes.Equal(readFile(t, filepath.Join(out1, name)), readFile(t, filepath.Join(out2, name))) {
			t.Errorf("%s differs between two packs of the same input", name)
		}
	}
}

func TestCompressAuto(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("compressible line of text\n", 4000)
	random := string(pseudoRandom(200000))
	src := tree(t, map[string]string{"text.txt": text, "random.dat": random, "photo.jpg": text, "big.txt": strings.Repeat(text, 100)})
	res, out := mustPack(t, src, testOptions())
	methods := entryMethods(t, filepath.Join(out, res.Packages[0].Name))
	want := map[string]uint16{"resources/text.txt": 8, "resources/random.dat": 0, "resources/photo.jpg": 0, "resources/big.txt": 8}
	for name, m := range want {
		if methods[name] != m {
			t.Errorf("%s: method %d, want %d", name, methods[name], m)
		}
	}
	checkPackage(t, filepath.Join(out, res.Packages[0].Name))
}

func TestEmptySource(t *testing.T) {
	t.Parallel()
	res, out := mustPack(t, t.TempDir(), testOptions())
	if len(res.Packages) != 0 {
		t.Errorf("%d packages from an empty tree", len(res.Packages))
	}
	checkDump(t, out, res)
}

func TestBadOptions(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a": "a"})
	for _, o := range []Options{
		{},
		{BaseURL: "relative/path"},
		{BaseURL: "http://h/?q=1"},
		{BaseURL: "http://h/", Hashes: []string{"blake3"}},
		{BaseURL: "http://h/", Level: 12},
	} {
		if _, err := Pack(context.Background(), src, t.TempDir(), o); err == nil {
			t.Errorf("Pack accepted %+v", o)
		}
	}
	if _, err := Pack(context.Background(), filepath.Join(src, "a"), t.TempDir(), testOptions()); err == nil {
		t.Error("Pack accepted a file as source")
	}
}

func TestSymlinksAndSpecialFiles(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"real.txt": "real"})
	os.Symlink("real.txt", filepath.Join(src, "link.txt"))
	if err := syscall.Mkfifo(filepath.Join(src, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	o := testOptions()
	o.Events = func(e finding.Event) {
		if w, ok := e.(finding.Finding); ok {
			warnings = append(warnings, w.String())
		}
	}
	res, _ := mustPack(t, src, o)
	if res.Bitstreams != 1 || res.Skipped != 2 || len(warnings) != 2 {
		t.Errorf("bitstreams %d skipped %d warnings %q; want 1, 2, 2", res.Bitstreams, res.Skipped, warnings)
	}
	o.FollowSymlinks = true
	res, out := mustPack(t, src, o)
	if res.Bitstreams != 2 {
		t.Errorf("with --follow-symlinks: %d bitstreams, want 2", res.Bitstreams)
	}
	checkPackage(t, filepath.Join(out, res.Packages[0].Name))
}

func TestVanishingFile(t *testing.T) {
	src := tree(t, map[string]string{"a.txt": "a", "gone.txt": "soon gone"})
	defer setHook(func(rel string) {
		if rel == "gone.txt" {
			os.Remove(filepath.Join(src, rel))
		}
	})()
	out := t.TempDir()
	_, err := Pack(context.Background(), src, out, testOptions())
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != "gone.txt" || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("error %v, want a FileError naming gone.txt", err)
	}
	assertNoFinalOutputs(t, out)
}

func TestChangedFile(t *testing.T) {
	for _, size := range []int{100, smallMax + 1} { // in memory, and streamed
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			src := tree(t, map[string]string{"a.txt": "a", "grows.bin": strings.Repeat("x", size), "z.txt": "z"})
			defer setHook(func(rel string) {
				if rel == "grows.bin" {
					f, _ := os.OpenFile(filepath.Join(src, rel), os.O_APPEND|os.O_WRONLY, 0)
					f.WriteString("more")
					f.Close()
				}
			})()
			out := t.TempDir()
			_, err := Pack(context.Background(), src, out, testOptions())
			if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "grows.bin") {
				t.Fatalf("error %v, want ErrChanged naming grows.bin", err)
			}
			assertNoFinalOutputs(t, out)
			o := testOptions()
			o.SkipChanged = true
			res, out := mustPack(t, src, o)
			if res.Bitstreams != 2 || res.Skipped != 1 {
				t.Errorf("bitstreams %d skipped %d, want 2 and 1", res.Bitstreams, res.Skipped)
			}
			checkPackage(t, filepath.Join(out, res.Packages[0].Name))
			checkDump(t, out, res)
		})
	}
}

func setHook(f func(string)) (restore func()) {
	old := beforeRead
	beforeRead = f
	return func() { beforeRead = old }
}

// assertNoFinalOutputs checks a failed run left no package, manifest or
// dump document under a final name.
func assertNoFinalOutputs(t *testing.T, out string) {
	t.Helper()
	for _, pat := range []string{"*.zip", "*.manifest.xml", layout.DumpName, ".*.tmp"} {
		if m, _ := filepath.Glob(filepath.Join(out, pat)); len(m) > 0 {
			t.Errorf("failed run left %v", m)
		}
	}
}

func entryMethods(t *testing.T, path string) map[string]uint16 {
	t.Helper()
	zr, err := openZip(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	m := map[string]uint16{}
	for _, f := range zr.File {
		m[f.Name] = f.Method
	}
	return m
}

// pseudoRandom returns incompressible bytes, the same every run.
func pseudoRandom(n int) []byte {
	b := make([]byte, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

func TestOutputInsideSource(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a.txt": "a"})
	out := filepath.Join(src, "dump")
	res, err := Pack(context.Background(), src, out, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if res.Bitstreams != 1 || res.Skipped != 1 {
		t.Errorf("bitstreams %d skipped %d, want 1 and 1 (the output directory)", res.Bitstreams, res.Skipped)
	}
}

// TestOutputInsideSourceAsTyped: an output inside the source is left out
// however the two are named (relative to the working directory, one
// absolute and the other not, through a symbolic link), in a Resource
// Dump and in a Change Dump run again over it; an output that is the
// source itself is refused before anything is written.
func TestOutputInsideSourceAsTyped(t *testing.T) {
	// setup makes dir/src with a.txt and dir/linked-out, a link to
	// dir/src/real-out, and makes dir the working directory.
	setup := func() (dir, src string) {
		dir = t.TempDir()
		src = filepath.Join(dir, "src")
		os.MkdirAll(filepath.Join(src, "real-out"), 0o755)
		os.WriteFile(filepath.Join(src, "a.txt"), []byte("a"), 0o644)
		if err := os.Symlink(filepath.Join(src, "real-out"), filepath.Join(dir, "linked-out")); err != nil {
			t.Fatal(err)
		}
		t.Chdir(dir)
		return dir, src
	}
	cases := []struct{ src, out string }{
		{"src", "src/out"},
		{"src", "<dir>/src/abs-out"},
		{"<dir>/src", "src/rel-out"},
		{"src/.", "./src/../src/dot-out"},
		{"src", "linked-out"},
	}
	for _, c := range cases {
		dir, _ := setup()
		c.src, c.out = strings.Replace(c.src, "<dir>", dir, 1), strings.Replace(c.out, "<dir>", dir, 1)
		for _, changes := range []bool{false, true} {
			o := testOptions()
			o.At = time.Time{}
			o.Changes = changes
			res, err := Pack(context.Background(), c.src, c.out, o)
			if err != nil {
				t.Fatalf("Pack(%q, %q, changes %v): %v", c.src, c.out, changes, err)
			}
			if res.Skipped != 1 {
				t.Errorf("Pack(%q, %q, changes %v): %d skipped, want 1 (the output)", c.src, c.out, changes, res.Skipped)
			}
			for _, p := range res.Packages {
				for _, u := range checkPackage(t, filepath.Join(c.out, p.Name)) {
					if u.MD.Path != "/resources/a.txt" && u.MD.Path != "/changes/a.txt" {
						t.Errorf("Pack(%q, %q, changes %v) packed %s", c.src, c.out, changes, u.MD.Path)
					}
				}
			}
		}
	}
	for _, c := range []struct{ src, out string }{{".", "."}, {"src", "src"}, {"src", "./src/"}, {"<dir>/src", "src"}, {"src/real-out", "linked-out"}} {
		dir, src := setup()
		if c.src == "." {
			t.Chdir(src)
		}
		c.src = strings.Replace(c.src, "<dir>", dir, 1)
		_, err := Pack(context.Background(), c.src, c.out, testOptions())
		if !errors.Is(err, ErrSourceIsOutput) {
			t.Errorf("Pack(%q, %q) = %v, want ErrSourceIsOutput", c.src, c.out, err)
		}
		if _, err := os.Stat(filepath.Join(src, journalName)); err == nil {
			t.Errorf("Pack(%q, %q), refused, left %s", c.src, c.out, journalName)
		}
	}
}

func TestScan(t *testing.T) {
	t.Parallel()
	src := copyExample(t)
	files, n, err := Scan(context.Background(), src, false)
	res, _ := mustPack(t, src, testOptions())
	if err != nil || files != res.Bitstreams || n != res.Bytes {
		t.Errorf("Scan = %d files, %d bytes, %v; Pack wrote %d, %d", files, n, err, res.Bitstreams, res.Bytes)
	}
}

func TestUnsafeNamesSkipped(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"ok.txt": "ok", "bad\x01name": "x", "latin1-\xe9.txt": "y"})
	res, out := mustPack(t, src, testOptions())
	if res.Bitstreams != 1 || res.Skipped != 2 {
		t.Errorf("bitstreams %d skipped %d, want 1 and 2", res.Bitstreams, res.Skipped)
	}
	checkPackage(t, filepath.Join(out, res.Packages[0].Name))
}

// Names verify and unpack would refuse (internal/safepath) are skipped
// with a warning rather than written into a package.
func TestNamesVerifyRefusesSkipped(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"ok.txt": "ok", `back\slash.txt`: "x", "c:x": "y", "d:/inner.txt": "z"})
	res, out := mustPack(t, src, testOptions())
	if res.Bitstreams != 1 || res.Skipped != 3 {
		t.Errorf("bitstreams %d skipped %d, want 1 and 3", res.Bitstreams, res.Skipped)
	}
	checkPackage(t, filepath.Join(out, res.Packages[0].Name))
}

// TestPublishFailureStops: when a package cannot be published, the run
// fails naming it, and no later package or dump document appears.
func TestPublishFailureStops(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a": strings.Repeat("a", 3000), "b": strings.Repeat("b", 3000), "c": strings.Repeat("c", 3000)})
	out := t.TempDir()
	// A directory where the first detached manifest must go.
	os.MkdirAll(filepath.Join(out, manifestName(packageName(1)), "x"), 0o755)
	o := testOptions()
	o.MaxPackageSize = 4000
	_, err := Pack(context.Background(), src, out, o)
	if err == nil || !strings.Contains(err.Error(), manifestName(packageName(1))) {
		t.Fatalf("error %v, want one naming %s", err, manifestName(packageName(1)))
	}
	for _, name := range []string{packageName(1), packageName(2), packageName(3), layout.DumpName} {
		if _, err := os.Stat(filepath.Join(out, name)); err == nil {
			t.Errorf("%s published after the first package failed", name)
		}
	}
}

// TestFreshRunRemovesOldDump: a new run into a directory holding an
// earlier dump removes the old resourcedump.xml first, so a failed run
// does not leave it describing packages that changed.
func TestFreshRunRemovesOldDump(t *testing.T) {
	src := tree(t, map[string]string{"a.txt": "a", "gone.txt": "soon gone"})
	_, out := mustPack(t, src, testOptions())
	defer setHook(func(rel string) {
		if rel == "gone.txt" {
			os.Remove(filepath.Join(src, rel))
		}
	})()
	o := testOptions()
	o.Hashes = []string{"sha-512"} // other options: the journal is not reused
	if _, err := Pack(context.Background(), src, out, o); err == nil {
		t.Fatal("expected the vanishing file to fail the run")
	}
	if _, err := os.Stat(filepath.Join(out, layout.DumpName)); err == nil {
		t.Error("the old resourcedump.xml survived a failed fresh run")
	}
}

// TestCancelDuringStreamedFile: an interrupt while a large file streams
// stops the run with context.Canceled and publishes nothing.
func TestCancelDuringStreamedFile(t *testing.T) {
	src := tree(t, map[string]string{"big.bin": strings.Repeat("x", 3*smallMax)})
	ctx, cancel := context.WithCancel(context.Background())
	defer setHook(func(rel string) { cancel() })()
	out := t.TempDir()
	_, err := Pack(ctx, src, out, testOptions())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	assertNoFinalOutputs(t, out)
}

// TestRerunRemovesStaleFiles: a run into the directory of a larger
// earlier dump reports the packages, manifests and Metalinks the new dump
// no longer names; with Prune it removes them, reports each, and leaves
// every other file alone.
func TestRerunRemovesStaleFiles(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a": strings.Repeat("a", 3000), "b": strings.Repeat("b", 3000), "c": strings.Repeat("c", 3000)})
	o := testOptions()
	o.MaxPackageSize = 4000
	o.Metalink = &MetalinkOptions{PieceLength: 64 << 10}
	_, out := mustPack(t, src, o)
	others := []string{"notes.txt", "resourcedump-00002.zip.bak", "resourcedump-9.zip"}
	for _, name := range others {
		os.WriteFile(filepath.Join(out, name), []byte("keep"), 0o644)
	}
	os.Mkdir(filepath.Join(out, "resourcedump-00007.zip"), 0o755) // not a regular file

	os.Remove(filepath.Join(src, "b"))
	os.Remove(filepath.Join(src, "c"))
	o.Metalink = nil
	var removed, warnings []string
	o.Events = func(e finding.Event) {
		switch e := e.(type) {
		case Removed:
			removed = append(removed, e.Name)
		case finding.Finding:
			warnings = append(warnings, e.Msg)
		}
	}
	if _, err := Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	// Without Prune they are reported, and stay.
	if len(removed) > 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "resourcedump-00001.zip.meta4, resourcedump-00002.manifest.xml, resourcedump-00002.zip and 4 more") {
		t.Fatalf("without Prune: removed %q, warnings %q", removed, warnings)
	}
	warnings = nil
	o.Prune = true
	if _, err := Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	want := []string{"resourcedump-00001.zip.meta4", "resourcedump-00002.manifest.xml", "resourcedump-00002.zip",
		"resourcedump-00002.zip.meta4", "resourcedump-00003.manifest.xml", "resourcedump-00003.zip", "resourcedump-00003.zip.meta4"}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	var left []string
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			left = append(left, e.Name())
		}
	}
	want = append([]string{layout.DumpName, "resourcedump-00001.manifest.xml", "resourcedump-00001.zip", "resourcedump-00007.zip", layout.ResourceListName, layout.CapabilityListName}, others...)
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("left %q, want %q", left, want)
	}
}

// TestPruneIndexParts: the parts of a dump index are kept while the new
// dump needs them, and removed past its last part or when it fits one
// document.
func TestPruneIndexParts(t *testing.T) {
	t.Parallel()
	for _, n := range []int{resourcesync.MaxEntries + 1, 3} {
		dir := t.TempDir()
		for i := 1; i <= 3; i++ {
			os.WriteFile(filepath.Join(dir, dumpPartName(i)), nil, 0o644)
		}
		r := &run{dir: dir, out: dirOutput(t, dir), pkgs: make([]PackageInfo, n), events: func(finding.Event) {}, opts: &Options{Prune: true}, list: &listWriter{}}
		r.prune()
		var left []string
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			left = append(left, e.Name())
		}
		want := []string{dumpPartName(1), dumpPartName(2)}
		if n <= resourcesync.MaxEntries {
			want = nil
		}
		if !slices.Equal(left, want) {
			t.Errorf("%d packages: left %q, want %q", n, left, want)
		}
	}
}

// TestPruneRefusesEmptyDump: a run that finds no files (a wrong or
// unmounted source) leaves the earlier dump's packages, even with Prune.
func TestPruneRefusesEmptyDump(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a": strings.Repeat("a", 3000), "b": strings.Repeat("b", 3000)})
	o := testOptions()
	o.MaxPackageSize = 4000
	_, out := mustPack(t, src, o)
	o.Prune = true
	var warned bool
	o.Events = func(e finding.Event) {
		if w, ok := e.(finding.Finding); ok && strings.Contains(w.Msg, "the new dump is empty") {
			warned = true
		}
	}
	if _, err := Pack(context.Background(), t.TempDir(), out, o); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{packageName(1), packageName(2), manifestName(packageName(2))} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if !warned {
		t.Error("no warning that the stale files were kept")
	}
}
