package serve_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/serve"
)

// site is a serve handler over a packed directory, on a loopback
// httptest server whose address was known before packing, so that the
// documents name it.
type site struct {
	URL  string // http://127.0.0.1:port
	Dir  string // the pack output
	Src  string // the tree packed
	srv  *httptest.Server
	logs *logs
}

type logs struct {
	mu sync.Mutex
	rs []serve.Request
}

func (l *logs) add(r serve.Request) { l.mu.Lock(); l.rs = append(l.rs, r); l.mu.Unlock() }

func (l *logs) all() []serve.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]serve.Request(nil), l.rs...)
}

// listen starts a loopback server whose handler is set later.
func listen(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	t.Cleanup(ts.Close)
	return ts, "http://" + ts.Listener.Addr().String()
}

// packTree packs files into a new directory: base URL base+"/res/", the
// packages under base+"/dump/", with a Metalink per package and the given
// mirrors (dump URLs), small packages so there are several.
func packTree(t *testing.T, files map[string]string, base string, mirrors ...string) (src, dir string) {
	t.Helper()
	src = verifytest.Tree(t, files)
	dir = t.TempDir()
	ml := &pack.MetalinkOptions{Mirrors: []layout.Mirror{{BaseURL: base + "/dump/"}}}
	for _, m := range mirrors {
		ml.Mirrors = append(ml.Mirrors, layout.Mirror{BaseURL: m})
	}
	opts := pack.Options{BaseURL: base + "/res/", DumpURL: base + "/dump/", MaxPackageSize: 64 << 10, Metalink: ml, At: verifytest.Time}
	if _, err := pack.Pack(context.Background(), src, dir, opts); err != nil {
		t.Fatal(err)
	}
	return src, dir
}

// newSite packs files and serves the output with opts (URLs filled in
// when empty).
func newSite(t *testing.T, files map[string]string, opts serve.Options, mirrors ...string) *site {
	t.Helper()
	ts, u := listen(t)
	src, dir := packTree(t, files, u, mirrors...)
	return startSite(t, ts, u, src, dir, opts)
}

func startSite(t *testing.T, ts *httptest.Server, u, src, dir string, opts serve.Options) *site {
	t.Helper()
	s := &site{URL: u, Dir: dir, Src: src, srv: ts, logs: &logs{}}
	if opts.BaseURL == "" {
		opts.BaseURL = u + "/res/"
	}
	if opts.DumpURL == "" {
		opts.DumpURL = u + "/dump/"
	}
	opts.Log = s.logs.add
	h, err := serve.New(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = h
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		if err := h.(io.Closer).Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// files returns n files of varied sizes, some larger than a package.
func files(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("d%d/f%03d.bin", i%3, i)] = strings.Repeat(fmt.Sprintf("%d:", i), 1+i*i*37%9000)
	}
	return m
}

func get(t *testing.T, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	return do(t, http.MethodGet, url, hdr...)
}

func do(t *testing.T, method, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// packages lists the package names in a pack output.
func packages(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*-[0-9]*.zip"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no packages in %s (%v)", dir, err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}
