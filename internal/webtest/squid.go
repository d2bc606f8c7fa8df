package webtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// Squid runs squid as a caching forward proxy on a free loopback port,
// its cache in memory: a client sends it its requests (an http.Transport
// whose Proxy is http.ProxyURL of the server's URL; the environment's
// HTTP_PROXY leaves loopback addresses out). Its access log has a line a
// request, squid's native format (TCP_MISS/200, TCP_MEM_HIT/200).
func Squid(t testing.TB) *Server {
	t.Helper()
	bin, s := newServer(t, "squid", Site{})
	conf := filepath.Join(s.Prefix, "squid.conf")
	text := fmt.Sprintf(`http_port %s
http_access allow localhost
http_access deny all
pid_filename %[2]s/squid.pid
cache_log %[2]s/cache.log
access_log stdio:%[3]s
coredump_dir %[2]s
cache_mem 64 MB
maximum_object_size_in_memory 8 MB
refresh_pattern . 60 50%% 4320
shutdown_lifetime 0 seconds
`, s.Addr, s.Prefix, s.AccessLog)
	if root() {
		// squid leaves root for this user, which must write its logs.
		text += "cache_effective_user proxy\n"
		readableByAll(t, s.Prefix)
		if u, err := userIDs("proxy"); err == nil {
			os.Chown(s.Prefix, u, u)
		}
	}
	writeConfig(t, conf, text)
	start(t, s, exec.Command(bin, "-N", "-d1", "-f", conf))
	return s
}

// userIDs is the user id (and, for proxy, group id) of a system user.
func userIDs(name string) (int, error) {
	out, err := exec.Command("id", "-u", name).Output()
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(out[:len(out)-1]))
}
