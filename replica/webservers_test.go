package replica_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/internal/webtest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/serve"
)

// published is a tree packed for a server at base (scheme://addr): its
// resources under /res/, the pack output at the root.
type published struct {
	files    map[string]string
	src, out string
	base     string
}

// publish packs files as a Resource Dump of packages of at most 200 KB
// (stored: a repair reads its file's bytes by range), with a Resource
// List and a Source Description; listsOnly leaves the dump out, so that
// a sync fetches every resource from its own URL.
func publish(t *testing.T, files map[string]string, base string, listsOnly bool) *published {
	t.Helper()
	p := &published{files: files, src: verifytest.Tree(t, files), out: t.TempDir(), base: base}
	o := pack.Options{BaseURL: base + "/res/", DumpURL: base + "/", SourceDescription: true, Compress: pack.Store,
		MaxPackageSize: 200 << 10, At: t0}
	if _, err := pack.Pack(context.Background(), p.src, p.out, o); err != nil {
		t.Fatal(err)
	}
	if listsOnly {
		dumps, _ := filepath.Glob(filepath.Join(p.out, "resourcedump*"))
		for _, d := range dumps {
			os.Remove(d)
		}
		caps := filepath.Join(p.out, layout.CapabilityListName)
		b, err := os.ReadFile(caps)
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, `capability="resourcedump"`) {
				kept = append(kept, line)
			}
		}
		if err := os.WriteFile(caps, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (p *published) site(addr string, ca *webtest.CA) webtest.Site {
	return webtest.Site{Addr: addr, Dirs: map[string]string{"/": p.out, "/res/": p.src}, TLS: ca,
		// Shorter than the run: connections are closed under it.
		KeepaliveTimeout: 50 * time.Millisecond, KeepaliveRequests: 5}
}

// syncAndRepair syncs p into a new directory with client, exact; then
// damages a file without changing its length or mtime, and a sync with
// --audit repairs it by ranges of its package.
func syncAndRepair(t *testing.T, p *published, client *http.Client, s *webtest.Server) {
	t.Helper()
	dst := t.TempDir()
	o := replica.Options{Client: client}
	res, fs, _ := syncRun(t, p.base, dst, o)
	if res.Problems() != 0 || res.Written != len(p.files) {
		t.Fatalf("sync: %+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, p.files)
	flipByte(t, filepath.Join(dst, "d3", "f0003.bin"), true)
	ranges := s.Count(t, 0, s.Status(http.StatusPartialContent))
	o.Audit = true
	res, fs, _ = syncRun(t, "", dst, o)
	if res.Problems() != 0 || res.Repair == nil || res.Repair.Repaired != 1 {
		t.Fatalf("sync --audit: %+v repair %+v\n%s", res, res.Repair, problems(fs))
	}
	sameTree(t, dst, p.files)
	if s.Count(t, ranges+1, s.Status(http.StatusPartialContent)) <= ranges {
		t.Errorf("%s served no range for the repair:\n%s", s.Name, strings.Join(s.Requests(t), "\n"))
	}
}

// checkProtocol fails when a request reached s over another protocol than
// want.
func checkProtocol(t *testing.T, s *webtest.Server, want string) {
	t.Helper()
	for _, line := range s.Requests(t) {
		if !strings.HasPrefix(line, want+" ") {
			t.Errorf("%s: a request over another protocol than %s: %s", s.Name, want, line)
			return
		}
	}
}

// TestSyncFromRealServers (issue 40, point 2): a pack output published by
// nginx and by Apache httpd, over plain HTTP/1.1 and over HTTP/2 with TLS
// (a test CA), each with keep-alive time-outs of 50 ms and 5 requests a
// connection: sync makes the exact tree, and repairs a damaged file by
// ranges with --audit.
func TestSyncFromRealServers(t *testing.T) {
	t.Parallel()
	ca := webtest.NewCA(t)
	for _, c := range []struct {
		name  string
		start func(testing.TB, webtest.Site) *webtest.Server
		tls   bool
		proto string
	}{
		{"nginx", webtest.Nginx, false, "HTTP/1.1"}, {"nginx-h2", webtest.Nginx, true, "HTTP/2.0"},
		{"apache", webtest.Apache, false, "HTTP/1.1"}, {"apache-h2", webtest.Apache, true, "HTTP/2.0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			addr := webtest.FreeAddr(t)
			scheme, tlsCA := "http", (*webtest.CA)(nil)
			if c.tls {
				scheme, tlsCA = "https", ca
			}
			p := publish(t, randomFiles(24, 30_000), scheme+"://"+addr, false)
			s := c.start(t, p.site(addr, tlsCA))
			syncAndRepair(t, p, httpc.New(httpc.Options{RootCAs: ca.Pool, DisableCompression: true}), s)
			checkProtocol(t, s, c.proto)
		})
	}
}

// TestSyncThroughSquid: sync through squid, a caching forward proxy, in
// front of rsdump serve (which announces h2c: a client behind a proxy
// does not take it up): exact, the repair's ranges through the proxy,
// and a second sync into another directory served from squid's cache.
func TestSyncThroughSquid(t *testing.T) {
	proxy := webtest.Squid(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	p := publish(t, randomFiles(24, 30_000), base, false)
	// Files an hour old: the cache keeps them without asking again.
	old := time.Now().Add(-time.Hour)
	filepath.Walk(p.out, func(path string, _ os.FileInfo, _ error) error { return os.Chtimes(path, old, old) })
	h, err := serve.New(p.out, serve.Options{BaseURL: base + "/res/", DumpURL: base + "/", Resources: p.src})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve.NewServer(h, serve.Timeouts{})
	go srv.Serve(serve.Coalesce(ln))
	t.Cleanup(func() { srv.Close() })
	pu, _ := url.Parse(proxy.URL)
	client := httpc.New(httpc.Options{Proxy: http.ProxyURL(pu), DisableCompression: true})
	syncAndRepair(t, p, client, proxy)
	hits := proxy.Count(t, 0, "HIT/")
	res, fs, _ := syncRun(t, base, t.TempDir(), replica.Options{Client: client})
	if res.Problems() != 0 || res.Written != len(p.files) {
		t.Fatalf("second sync: %+v\n%s", res, problems(fs))
	}
	if proxy.Count(t, hits+1, "HIT/") <= hits {
		t.Errorf("squid served nothing of the second sync from its cache:\n%s", strings.Join(proxy.Requests(t), "\n"))
	}
}

// TestListSyncNginxKeepalive (issue 39, point 5): a Source of lists only
// (every resource fetched from its own URL) behind nginx closing idle
// connections after a millisecond and every connection after 3
// requests: no resource is missing.
func TestListSyncNginxKeepalive(t *testing.T) {
	n := 1500
	if testing.Short() {
		n = 500
	}
	addr := webtest.FreeAddr(t)
	p := publish(t, files(n, 200), "http://"+addr, true)
	site := p.site(addr, nil)
	site.KeepaliveTimeout, site.KeepaliveRequests = time.Millisecond, 3
	s := webtest.Nginx(t, site)
	dst := t.TempDir()
	res, fs, _ := syncRun(t, p.base, dst, replica.Options{})
	if res.Problems() != 0 || res.Written != n {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, p.files)
	if got := s.Count(t, n, " 200 GET /res/"); got < n {
		t.Errorf("nginx logged %d resource GETs, want %d", got, n)
	}
}
