package replica_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/transfer"
)

// faulty serves dir as a mirror: with corrupt, every package byte range
// it sends has a flipped byte; with dieAfter > 0, it aborts every
// connection once it has sent that many package bytes.
type faulty struct {
	srv      *httptest.Server
	corrupt  bool
	dieAfter int64
	sent     atomic.Int64
	requests atomic.Int64
}

func newFaulty(t *testing.T, dir string, corrupt bool, dieAfter int64) *faulty {
	f := &faulty{corrupt: corrupt, dieAfter: dieAfter}
	fsrv := http.FileServer(http.Dir(dir))
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, ".zip") {
			fsrv.ServeHTTP(w, r)
			return
		}
		f.requests.Add(1)
		if f.dieAfter > 0 && f.sent.Load() >= f.dieAfter {
			panic(http.ErrAbortHandler)
		}
		fsrv.ServeHTTP(&faultWriter{ResponseWriter: w, f: f}, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

type faultWriter struct {
	http.ResponseWriter
	f       *faulty
	flipped bool
}

func (w *faultWriter) Write(b []byte) (int, error) {
	if w.f.corrupt && !w.flipped && len(b) > 0 {
		c := append([]byte(nil), b...)
		c[len(c)/2] ^= 0xff
		b, w.flipped = c, true
	}
	if w.f.dieAfter > 0 && w.f.sent.Add(int64(len(b))) > w.f.dieAfter {
		panic(http.ErrAbortHandler)
	}
	return w.ResponseWriter.Write(b)
}

// TestMirrorsCorruptAndDying syncs from a Resource Dump published on
// three mirrors, one of which corrupts every range it serves and one of
// which dies part way: the copy is exact, and the faulty mirrors were
// asked for data.
func TestMirrorsCorruptAndDying(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(48, 40000))
	bad := newFaulty(t, s.out, true, 0)
	dying := newFaulty(t, s.out, false, 300<<10)
	s.packDump(pack.Options{MaxPackageSize: 600 << 10, Compress: pack.Store,
		Metalink: &pack.MetalinkOptions{PieceLength: 32 << 10, Mirrors: []layout.Mirror{
			{BaseURL: s.srv.URL + "/"}, {BaseURL: bad.srv.URL + "/"}, {BaseURL: dying.srv.URL + "/"}}}})
	dst := t.TempDir()
	res, fs, _ := syncRun(t, s.srv.URL+"/", dst, replica.Options{Transfer: transfer.Options{PerMirror: 2, Connections: 6}})
	if res.Problems() != 0 || res.Written != 48 || res.Packages < 3 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)
	if bad.requests.Load() == 0 || dying.requests.Load() == 0 {
		t.Errorf("faulty mirrors not used: corrupt %d requests, dying %d", bad.requests.Load(), dying.requests.Load())
	}
	if dying.sent.Load() < 300<<10 {
		t.Errorf("the dying mirror never died: sent %d", dying.sent.Load())
	}
}
