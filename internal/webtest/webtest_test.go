package webtest

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
)

func get(t *testing.T, c *http.Client, u string) (string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s, %v", u, resp.Status, err)
	}
	return string(b), resp.Proto
}

func site(t *testing.T) Site {
	dir, res := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "doc.xml"), []byte("<urlset/>"), 0o644)
	os.MkdirAll(filepath.Join(res, "a"), 0o755)
	os.WriteFile(filepath.Join(res, "a", "r.txt"), []byte("resource"), 0o644)
	old := time.Now().Add(-time.Hour) // a cache keeps it without asking again
	os.Chtimes(filepath.Join(res, "a", "r.txt"), old, old)
	return Site{Dirs: map[string]string{"/": dir, "/res/": res}}
}

// Each server serves the site's directories under their paths, over
// HTTP/2 with TLS where asked; squid proxies and caches.
func TestServers(t *testing.T) {
	t.Parallel()
	ca := NewCA(t)
	for _, c := range []struct {
		name  string
		start func(testing.TB, Site) *Server
		tls   bool
		proto string
	}{
		{"nginx", Nginx, false, "HTTP/1.1"}, {"nginx-tls", Nginx, true, "HTTP/2.0"},
		{"apache", Apache, false, "HTTP/1.1"}, {"apache-tls", Apache, true, "HTTP/2.0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st := site(t)
			if c.tls {
				st.TLS = ca
			}
			s := c.start(t, st)
			client := httpc.New(httpc.Options{RootCAs: ca.Pool})
			if body, proto := get(t, client, s.URL+"/doc.xml"); body != "<urlset/>" || proto != c.proto {
				t.Errorf("doc.xml: %q over %s, want %s", body, proto, c.proto)
			}
			if body, _ := get(t, client, s.URL+"/res/a/r.txt"); body != "resource" {
				t.Errorf("res/a/r.txt: %q", body)
			}
			if n := s.Count(t, 1, c.proto, " 200 GET /res/a/r.txt"); n != 1 {
				t.Errorf("access log: %d lines of the resource's GET\n%q", n, s.Requests(t))
			}
		})
	}
	t.Run("squid", func(t *testing.T) {
		t.Parallel()
		origin := Nginx(t, site(t))
		proxy := Squid(t)
		pu, _ := url.Parse(proxy.URL)
		client := httpc.New(httpc.Options{Proxy: http.ProxyURL(pu)})
		for range 2 {
			if body, _ := get(t, client, origin.URL+"/res/a/r.txt"); body != "resource" {
				t.Errorf("through squid: %q", body)
			}
		}
		if origin.Count(t, 1, "GET /res/a/r.txt") != 1 || proxy.Count(t, 1, "HIT/200") != 1 {
			t.Errorf("the second GET was not a cache hit:\norigin %q\nsquid %q", origin.Requests(t), proxy.Requests(t))
		}
	})
}
