package replica_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc/httpctest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/unpack"
)

// packed is a Source as rsdump pack makes one: a tree packed into a
// Resource Dump, then into Change Dumps and Change Lists by pack
// --changes, the output served on loopback at the root with the
// resources under /res/. It counts the bytes of packages served.
type packed struct {
	t        testing.TB
	src, out string
	srv      *httptest.Server
	base     string
	runs     int
	zipBytes atomic.Int64 // bytes of .zip responses
}

func newPacked(t testing.TB, files map[string]string) *packed {
	p := &packed{t: t, src: t.TempDir(), out: t.TempDir()}
	verifytest.WriteFiles(t, p.src, files)
	mux := http.NewServeMux()
	mux.Handle("/res/", http.StripPrefix("/res/", http.FileServer(http.Dir(p.src))))
	mux.Handle("/", http.FileServer(http.Dir(p.out)))
	p.srv = httptest.NewServer(httpctest.Counting(mux, ".zip", &p.zipBytes))
	t.Cleanup(p.srv.Close)
	p.base = p.srv.URL + "/res/"
	return p
}

// pack runs pack (changes: pack --changes) over the tree, each run an hour
// after the last.
func (p *packed) pack(changes bool, o pack.Options) {
	p.t.Helper()
	o.BaseURL, o.DumpURL, o.Changes = p.base, p.srv.URL+"/", changes
	o.At = t0.Add(time.Duration(p.runs) * time.Hour)
	p.runs++
	if _, err := pack.Pack(context.Background(), p.src, p.out, o); err != nil {
		p.t.Fatal(err)
	}
}

// write changes the Source's tree: data "" deletes.
func (p *packed) write(files map[string]string) {
	p.t.Helper()
	for rel, data := range files {
		path := filepath.Join(p.src, filepath.FromSlash(rel))
		if data == "" {
			if err := os.RemoveAll(path); err != nil {
				p.t.Fatal(err)
			}
			continue
		}
		verifytest.WriteFiles(p.t, p.src, map[string]string{rel: data})
		// A time inside the next run's interval, distinct from the last.
		mt := t0.Add(time.Duration(p.runs-1)*time.Hour + 30*time.Minute)
		os.Chtimes(path, mt, mt)
	}
}

// capabilities is the URL of the Source's Capability List.
func (p *packed) capabilities() string { return p.srv.URL + "/" + layout.CapabilityListName }

// TestDryRunPlansWholeChain: a dry run into a new directory plans the
// baseline and every Change Dump package after it from documents and
// detached manifests only: no byte of any package is served, nothing is
// written, and its counts are the real run's.
func TestDryRunPlansWholeChain(t *testing.T) {
	t.Parallel()
	p := newPacked(t, files(40, 3000))
	p.pack(false, pack.Options{MaxPackageSize: 30000})
	p.write(map[string]string{"d0/f000.txt": "updated", "new/n.txt": "created", "d1/f001.txt": ""})
	p.pack(true, pack.Options{})
	p.write(map[string]string{"d2/f002.txt": "updated again", "d3/f003.txt": "", "new/m.txt": "another"})
	p.pack(true, pack.Options{})

	dst := filepath.Join(t.TempDir(), "copy")
	dry, fs, _ := syncRun(t, p.capabilities(), dst, replica.Options{DryRun: true})
	if dry.Problems() != 0 {
		t.Fatalf("dry run: %+v\n%s", dry, problems(fs))
	}
	if n := p.zipBytes.Load(); n != 0 {
		t.Errorf("the dry run was served %d bytes of packages", n)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("the dry run created %s (%v)", dst, err)
	}
	real, fs, _ := syncRun(t, p.capabilities(), dst, replica.Options{})
	if real.Problems() != 0 {
		t.Fatalf("real run: %+v\n%s", real, problems(fs))
	}
	if got, want := dry.Result, real.Result; got.Packages != want.Packages || got.Written != want.Written ||
		got.Present != want.Present || got.Deleted != want.Deleted || got.Refused != want.Refused || got.Bytes != want.Bytes {
		t.Errorf("dry run planned %+v, the run did %+v", got, want)
	}
	if len(dry.Steps) != len(real.Steps) || len(real.Steps) != 2 {
		t.Errorf("steps: dry %d, real %d, want 2 (baseline and incremental)", len(dry.Steps), len(real.Steps))
	}
	sameTree(t, dst, verifytest.ReadTree(t, p.src))
}

// TestForeignFileSurvives: a file of the user's own in the destination,
// at no resource's name, survives the first sync and the changes after
// it, and --audit lists it as an extra, not an error; a first sync into a
// directory with a file at a resource's name refuses and writes nothing.
func TestForeignFileSurvives(t *testing.T) {
	t.Parallel()
	p := newPacked(t, files(6, 200))
	p.pack(false, pack.Options{})
	dst := t.TempDir()
	verifytest.WriteFiles(t, dst, map[string]string{"README.txt": "the user's own", "d0/f000.txt": "the user's version"})
	if _, err := replica.Sync(context.Background(), location(t, p.capabilities()), dst, replica.Options{}); !errors.Is(err, unpack.ErrForeign) ||
		!strings.Contains(err.Error(), filepath.Join(dst, "d0", "f000.txt")) {
		t.Fatalf("first sync over the user's d0/f000.txt: %v, want ErrForeign naming it", err)
	}
	if _, err := os.Stat(filepath.Join(dst, ".rsdump", "state.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused sync left a state (%v)", err)
	}
	os.Remove(filepath.Join(dst, "d0", "f000.txt"))
	syncRun(t, p.capabilities(), dst, replica.Options{})
	p.write(map[string]string{"d1/f001.txt": "", "d2/f002.txt": "changed"})
	p.pack(true, pack.Options{})
	res, fs, _ := syncRun(t, "", dst, replica.Options{Audit: true})
	if res.Problems() != 0 || res.Audit == nil || res.Audit.Errors != 0 || res.Audit.Extras != 1 {
		t.Fatalf("%+v audit %+v\n%s", res, res.Audit, problems(fs))
	}
	if !hasFinding(fs, finding.Warning, finding.CheckExtra) {
		t.Errorf("README.txt not listed as an extra:\n%s", problems(fs))
	}
	want := verifytest.ReadTree(t, p.src)
	want["README.txt"] = "the user's own"
	sameTree(t, dst, want)
}

// TestWrongGuessNotRecorded: a Source whose first detached manifest makes
// sync infer a wrong base URL fails the run before anything lands, and
// leaves no state; once the Source is honest, the same command succeeds
// with no --base-url and no hand edit.
func TestWrongGuessNotRecorded(t *testing.T) {
	t.Parallel()
	p := newPacked(t, files(6, 200))
	p.pack(false, pack.Options{})
	manifest := filepath.Join(p.out, "resourcedump-00001.manifest.xml")
	honest, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(manifest, []byte(strings.ReplaceAll(string(honest), "/res/", "/wrong/")), 0o644)
	dst := t.TempDir()
	_, err = replica.Sync(context.Background(), location(t, p.capabilities()), dst, replica.Options{})
	if !errors.Is(err, unpack.ErrBaseURL) {
		t.Fatalf("sync with a wrong guess: %v, want ErrBaseURL", err)
	}
	if st, err := deststate.Read(dst); err != nil || st.Sync != nil || !st.Since().IsZero() {
		t.Errorf("the failed run left a state: %+v (%v)", st, err)
	}
	os.WriteFile(manifest, honest, 0o644)
	res, fs, _ := syncRun(t, p.capabilities(), dst, replica.Options{})
	if res.Problems() != 0 || res.BaseURL != p.base {
		t.Fatalf("honest Source: %+v base %s\n%s", res, res.BaseURL, problems(fs))
	}
	sameTree(t, dst, verifytest.ReadTree(t, p.src))
}

// TestDryRunWithoutDetachedManifests: a Source that publishes no detached
// manifests (resync does not): the dry run reads each package's central
// directory and manifest entry by ranges, never its bitstreams, and its
// counts are still the run's.
func TestDryRunWithoutDetachedManifests(t *testing.T) {
	t.Parallel()
	p := newPacked(t, randomFiles(30, 20000))
	p.pack(false, pack.Options{Compress: pack.Store, MaxPackageSize: 250000})
	doc := filepath.Join(p.out, layout.DumpName)
	h, urls := verifytest.ReadDoc(t, doc)
	var total int64
	for i := range urls {
		urls[i].Links = nil // no rel="contents"
		total += *urls[i].MD.Length
	}
	verifytest.WriteDoc(t, doc, h, urls)
	dst := filepath.Join(t.TempDir(), "copy")
	dry, fs, _ := syncRun(t, p.capabilities(), dst, replica.Options{DryRun: true})
	served := p.zipBytes.Load()
	if dry.Problems() != 0 || served == 0 || served > total/4 {
		t.Fatalf("dry run: %+v, %d of %d package bytes served\n%s", dry, served, total, problems(fs))
	}
	t.Logf("dry run: %d of %d package bytes served (central directories and manifests)", served, total)
	real, fs, _ := syncRun(t, p.capabilities(), dst, replica.Options{})
	if real.Problems() != 0 || dry.Written != real.Written || dry.Packages != real.Packages || dry.Bytes != real.Bytes {
		t.Errorf("dry run planned %+v, the run did %+v\n%s", dry.Result, real.Result, problems(fs))
	}
}
