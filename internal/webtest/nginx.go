package webtest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Site is what a web server publishes, and how.
type Site struct {
	Addr string            // from FreeAddr; "" picks one
	Dirs map[string]string // URL path prefix ("/", "/res/") → the directory served there
	TLS  *CA               // nil: plain http; else https, with HTTP/2 offered
	// KeepaliveTimeout closes a connection idle that long between
	// requests; KeepaliveRequests closes one after that many requests.
	// 0: the server's default.
	KeepaliveTimeout  time.Duration
	KeepaliveRequests int
}

// prefixes are s's URL path prefixes, the longest first.
func (s Site) prefixes() []string {
	var ps []string
	for p := range s.Dirs {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return len(ps[i]) > len(ps[j]) })
	return ps
}

// Nginx serves site with nginx (HTTP/2 over TLS: listen ... ssl http2).
// Its access log has a line a request: "PROTOCOL STATUS METHOD URI
// RANGE".
func Nginx(t testing.TB, site Site) *Server {
	t.Helper()
	bin, s := newServer(t, "nginx", site)
	var b strings.Builder
	if root() {
		b.WriteString("user root root;\n") // nginx lets its workers be root; they read the test's trees
	}
	fmt.Fprintf(&b, `daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 512; }
http {
	log_format proto '$server_protocol $status $request_method $uri "$http_range"';
	access_log %[1]s/access.log proto;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	types { application/xml xml; application/zip zip; text/plain txt; }
	default_type application/octet-stream;
	sendfile on;
`, s.Prefix)
	if site.KeepaliveTimeout > 0 {
		fmt.Fprintf(&b, "\tkeepalive_timeout %s;\n", millis(site.KeepaliveTimeout))
	}
	if site.KeepaliveRequests > 0 {
		fmt.Fprintf(&b, "\tkeepalive_requests %d;\n", site.KeepaliveRequests)
	}
	b.WriteString("\tserver {\n")
	if site.TLS != nil {
		fmt.Fprintf(&b, "\t\tlisten %s ssl http2;\n\t\tssl_certificate %s;\n\t\tssl_certificate_key %s;\n", s.Addr, site.TLS.CertFile, site.TLS.KeyFile)
	} else {
		fmt.Fprintf(&b, "\t\tlisten %s;\n", s.Addr)
	}
	for _, p := range site.prefixes() {
		dir, _ := filepath.Abs(site.Dirs[p])
		readableByAll(t, dir)
		fmt.Fprintf(&b, "\t\tlocation %s { alias %s/; }\n", p, strings.TrimSuffix(dir, "/"))
	}
	b.WriteString("\t}\n}\n")
	conf := filepath.Join(s.Prefix, "nginx.conf")
	writeConfig(t, conf, b.String())
	start(t, s, exec.Command(bin, "-p", s.Prefix, "-c", conf, "-e", filepath.Join(s.Prefix, "error.log")))
	return s
}
