package replica_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// TestFailedRollbackFinishedByNextSync: an unpack --rollback to an older
// snapshot that fails part way (a directory of the user's where one of
// its files must go) leaves the tree half-applied and says so in the
// state; the next sync says so too, takes the Source's current snapshot,
// and, while the directory is still in the way, ends with errors, never
// with none; once it is gone, the sync after makes the tree exactly the
// Source's and clears the record.
func TestFailedRollbackFinishedByNextSync(t *testing.T) {
	t.Parallel()
	p := newPacked(t, randomFiles(20, 2000))
	old := t.TempDir()
	if _, err := pack.Pack(context.Background(), p.src, old, pack.Options{BaseURL: p.base, At: t0}); err != nil {
		t.Fatal(err)
	}
	oldTree := verifytest.ReadTree(t, p.src)
	p.pack(false, pack.Options{})
	dst := t.TempDir()
	syncRun(t, p.capabilities(), dst, replica.Options{})
	repack(p, pack.Options{})
	if res, fs, _ := syncRun(t, "", dst, replica.Options{}); res.Problems() != 0 {
		t.Fatalf("re-base: %+v\n%s", res, problems(fs))
	}

	// d0/f0000.bin, changed since the old snapshot, is now a directory of
	// the user's.
	inTheWay := filepath.Join(dst, "d0", "f0000.bin")
	os.Remove(inTheWay)
	verifytest.WriteFiles(t, inTheWay, map[string]string{"mine.txt": "the user's own"})
	m, err := deststate.NewMapper(deststate.ByURI, p.base)
	if err != nil {
		t.Fatal(err)
	}
	oldDoc := filepath.Join(old, layout.DumpName)
	res, err := unpack.Unpack(context.Background(), oldDoc, dst, unpack.Options{Mapper: m, Rollback: true})
	if err != nil || res.Errors == 0 {
		t.Fatalf("rollback with a directory in the way: %+v %v", res, err)
	}
	st, err := deststate.Read(dst)
	if err != nil || st.Unfinished == nil || !st.Unfinished.Rollback || st.Unfinished.Document != oldDoc || !st.Unfinished.At.Equal(t0) {
		t.Fatalf("the failed rollback left no record: %+v (%v)", st, err)
	}
	if got := verifytest.ReadTree(t, dst)["d1/f0001.bin"]; got != oldTree["d1/f0001.bin"] {
		t.Fatalf("the rollback did not get part way: d1/f0001.bin is %.20q", got)
	}

	res2, fs, notes := syncRun(t, "", dst, replica.Options{})
	if res2.Errors == 0 || !hasFinding(fs, finding.Error, unpack.CheckUnfinished) {
		t.Errorf("a sync over the half-applied tree: %+v\n%s", res2, problems(fs))
	}
	if !strings.Contains(strings.Join(notes, "\n"), "half-applied") {
		t.Errorf("the notes do not say the tree is half-applied: %q", notes)
	}

	os.RemoveAll(inTheWay)
	res3, fs, _ := syncRun(t, "", dst, replica.Options{})
	if res3.Problems() != 0 || hasFinding(fs, finding.Error, unpack.CheckUnfinished) {
		t.Fatalf("sync once the directory is gone: %+v\n%s", res3, problems(fs))
	}
	sameTree(t, dst, verifytest.ReadTree(t, p.src))
	if st, err := deststate.Read(dst); err != nil || st.Unfinished != nil || !st.ResourceDumpAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("state after the finish: %+v (%v)", st, err)
	}
}

// TestCancelledRebaseFinishedByNextSync: a re-base cancelled part way
// (as Ctrl-C does), after its removals and its first packages, leaves
// the record; the next sync finishes it, fetching nothing of the
// packages the first applied whole.
func TestCancelledRebaseFinishedByNextSync(t *testing.T) {
	t.Parallel()
	p, dst := changedSource(t, 200000, func(rel, data string) string {
		switch {
		case rel == "d0/f0000.bin":
			return ""
		case strings.HasSuffix(rel, "0.bin") || strings.HasSuffix(rel, "5.bin"):
			return "changed " + data[:100]
		}
		return data
	})
	_, urls := verifytest.ReadDoc(t, filepath.Join(p.out, layout.DumpName))
	if len(urls) < 4 {
		t.Fatalf("%d packages, want at least 4", len(urls))
	}

	// The first run is cancelled when it asks for the third package.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	served := map[string]*atomic.Int64{}
	counter := func(path string) *atomic.Int64 {
		mu.Lock()
		defer mu.Unlock()
		if served[path] == nil {
			served[path] = new(atomic.Int64)
		}
		return served[path]
	}
	third := strings.TrimPrefix(urls[2].Loc, p.srv.URL)
	inner := p.srv.Config.Handler
	p.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == third {
			cancel()
		}
		if strings.HasSuffix(r.URL.Path, ".zip") {
			w = &countWriter{ResponseWriter: w, n: counter(r.URL.Path)}
		}
		inner.ServeHTTP(w, r)
	})
	_, err := replica.Sync(ctx, resourcesync.Location{}, dst, replica.Options{Jobs: 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled sync: %v", err)
	}
	st, err := deststate.Read(dst)
	if err != nil || st.Unfinished == nil || !st.Unfinished.At.Equal(t0.Add(time.Hour)) || !st.ResourceDumpAt.Equal(t0) {
		t.Fatalf("state after the cancel: %+v (%v)", st, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "d0", "f0000.bin")); !os.IsNotExist(err) {
		t.Errorf("the removals did not run before the cancel: %v", err)
	}

	mu.Lock()
	clear(served)
	mu.Unlock()
	res, fs, notes := syncRun(t, "", dst, replica.Options{Jobs: 1})
	if res.Problems() != 0 || len(res.Steps) != 1 || res.Steps[0].Kind != "finish" {
		t.Fatalf("the next sync: %+v steps %+v\n%s\n%s", res, res.Steps, strings.Join(notes, "\n"), problems(fs))
	}
	sameTree(t, dst, verifytest.ReadTree(t, p.src))
	for _, u := range urls[:2] {
		if n := counter(strings.TrimPrefix(u.Loc, p.srv.URL)).Load(); n != 0 {
			t.Errorf("%s, applied whole by the cancelled run, served %d bytes again", u.Loc, n)
		}
	}
	if st, err := deststate.Read(dst); err != nil || st.Unfinished != nil || st.Pending || !st.ResourceDumpAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("state after the finish: %+v (%v)", st, err)
	}
}

// countWriter counts the body bytes of a response.
type countWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n.Add(int64(n))
	return n, err
}
