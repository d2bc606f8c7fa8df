package webtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// apacheModules is where Debian keeps Apache's modules.
const apacheModules = "/usr/lib/apache2/modules"

// Apache serves site with Apache httpd (mpm_event; HTTP/2 over TLS with
// mod_http2 when it is installed, else HTTP/1.1). Its access log has a
// line a request: "PROTOCOL STATUS METHOD URI RANGE".
func Apache(t testing.TB, site Site) *Server {
	t.Helper()
	bin, s := newServer(t, "apache2", site)
	mods := []string{"mpm_event", "authz_core", "mime", "alias"}
	h2 := false
	if site.TLS != nil {
		mods = append(mods, "ssl", "socache_shmcb")
		if _, err := os.Stat(filepath.Join(apacheModules, "mod_http2.so")); err == nil {
			mods, h2 = append(mods, "http2"), true
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ServerRoot %q\nServerName 127.0.0.1\nListen %s\nPidFile %s/httpd.pid\nDefaultRuntimeDir %[3]s\nMutex file:%[3]s default\n",
		s.Prefix, s.Addr, s.Prefix)
	fmt.Fprintf(&b, "ErrorLog %s/error.log\nLogLevel warn\nLogFormat \"%%H %%>s %%m %%U \\\"%%{Range}i\\\"\" proto\nCustomLog %s proto\n", s.Prefix, s.AccessLog)
	for _, m := range mods {
		fmt.Fprintf(&b, "LoadModule %s_module %s/mod_%s.so\n", m, apacheModules, m)
	}
	if root() {
		// Apache refuses to serve as root: its workers are nobody's.
		b.WriteString("User nobody\nGroup nogroup\n")
	}
	b.WriteString("StartServers 1\nServerLimit 1\nThreadsPerChild 64\nMaxRequestWorkers 64\n")
	b.WriteString("TypesConfig /dev/null\nAddType application/xml .xml\nAddType application/zip .zip\nAddType text/plain .txt\n")
	b.WriteString("KeepAlive On\n")
	if site.KeepaliveTimeout > 0 {
		fmt.Fprintf(&b, "KeepAliveTimeout %s\n", millis(site.KeepaliveTimeout))
	}
	if site.KeepaliveRequests > 0 {
		fmt.Fprintf(&b, "MaxKeepAliveRequests %d\n", site.KeepaliveRequests)
	}
	b.WriteString("<Directory />\n\tRequire all granted\n</Directory>\n")
	for _, p := range site.prefixes() {
		dir, _ := filepath.Abs(site.Dirs[p])
		readableByAll(t, dir)
		if p == "/" {
			fmt.Fprintf(&b, "DocumentRoot %q\n", dir)
		} else {
			fmt.Fprintf(&b, "Alias %q %q\n", p, strings.TrimSuffix(dir, "/")+"/")
		}
	}
	if site.TLS != nil {
		fmt.Fprintf(&b, "SSLEngine on\nSSLCertificateFile %q\nSSLCertificateKeyFile %q\nSSLSessionCache shmcb:%s/ssl_scache(512000)\n", site.TLS.CertFile, site.TLS.KeyFile, s.Prefix)
		if h2 {
			b.WriteString("Protocols h2 http/1.1\n")
		}
	}
	conf := filepath.Join(s.Prefix, "httpd.conf")
	writeConfig(t, conf, b.String())
	start(t, s, exec.Command(bin, "-f", conf, "-DFOREGROUND"))
	return s
}
