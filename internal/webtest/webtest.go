// Package webtest runs the web servers rsdump's users publish with, for
// tests: nginx (HTTP/1.1, and HTTP/2 over TLS), Apache httpd (HTTP/1.1,
// and HTTP/2 over TLS with mod_http2) and squid (a caching forward
// proxy), each as a child process of the test on a free loopback port,
// with its configuration, logs and state in a temporary directory, and
// stopped at the end of the test. A server whose program is not
// installed skips the test, saying so (.ci/run installs them). Under
// root (CI), the servers' workers run as an unprivileged user where the
// program insists, and the trees they serve are made readable to all.
// NewCA makes the certificate authority and server certificate their
// TLS uses.
package webtest

import (
	"bufio"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is a web server started for a test.
type Server struct {
	Name      string // nginx, apache2, squid
	Addr      string // 127.0.0.1:PORT
	URL       string // http:// or https:// and Addr, no slash at the end
	Prefix    string // its configuration, logs and state
	AccessLog string // one line a request, in the format the starter says
}

// Status is what marks an answer of status code in the server's access
// log, for Count: " 206 ", or squid's "/206 ".
func (s *Server) Status(code int) string {
	if s.Name == "squid" {
		return fmt.Sprintf("/%d ", code)
	}
	return fmt.Sprintf(" %d ", code)
}

// Requests returns the lines of the server's access log so far.
func (s *Server) Requests(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(s.AccessLog)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// program finds a server's program, or skips the test.
func program(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	p := filepath.Join("/usr/sbin", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is not installed (.ci/run installs it): %s not found", name, p)
	}
	return p
}

// FreeAddr returns a loopback address with a port no one listens on
// now, for a server to be told before it starts (the pack output it
// serves names its URL).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// root says whether the test runs as root.
func root() bool { return os.Geteuid() == 0 }

// start runs the server's command, its output to PREFIX/NAME.out, until
// the end of the test, and waits until it accepts connections on addr.
func start(t testing.TB, s *Server, cmd *exec.Cmd) {
	t.Helper()
	out, err := os.Create(filepath.Join(s.Prefix, s.Name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); out.Close() }()
	t.Cleanup(func() {
		// The whole group: the master and its workers.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("%s exited before it listened on %s (%v):\n%s", s.Name, s.Addr, err, s.logs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s within 20 s:\n%s", s.Name, s.Addr, s.logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logs is the server's output and error log, for a failure's message.
func (s *Server) logs() string {
	var b strings.Builder
	for _, name := range []string{s.Name + ".out", "error.log", "cache.log"} {
		if data, err := os.ReadFile(filepath.Join(s.Prefix, name)); err == nil {
			fmt.Fprintf(&b, "--- %s\n%s", name, data)
		}
	}
	return b.String()
}

// newServer finds the program name (or skips the test) and makes the
// server it will run and its prefix directory: at site.Addr, a free
// loopback port when that is empty, https when the site has TLS.
func newServer(t testing.TB, name string, site Site) (bin string, s *Server) {
	t.Helper()
	bin = program(t, name)
	addr, scheme := site.Addr, "http"
	if addr == "" {
		addr = FreeAddr(t)
	}
	if site.TLS != nil {
		scheme = "https"
	}
	prefix := t.TempDir()
	return bin, &Server{Name: name, Addr: addr, URL: scheme + "://" + addr, Prefix: prefix, AccessLog: filepath.Join(prefix, "access.log")}
}

// writeConfig writes a server's configuration file.
func writeConfig(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readableByAll lets an unprivileged worker read dir: under root, every
// directory in it and above it gets o+rx, every file o+r. Nothing is
// done for another user, whose servers run as that user.
func readableByAll(t testing.TB, dir string) {
	t.Helper()
	if !root() {
		return
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		add := os.FileMode(0o004)
		if d.IsDir() {
			add = 0o005
		}
		return os.Chmod(p, fi.Mode().Perm()|add)
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := filepath.Dir(dir); p != "/" && p != "."; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o001 == 0 {
			os.Chmod(p, fi.Mode().Perm()|0o001)
		}
	}
}

// countLines counts the lines of the access log that contain every one
// of parts.
func (s *Server) countLines(t testing.TB, parts ...string) int {
	t.Helper()
	f, err := os.Open(s.AccessLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
line:
	for sc.Scan() {
		for _, p := range parts {
			if !strings.Contains(sc.Text(), p) {
				continue line
			}
		}
		n++
	}
	return n
}

// Count counts the requests whose access log line holds every one of
// parts ("HTTP/2.0", " 206 "). A server may log a request a moment
// after its answer (seconds, on a loaded machine): Count waits up to 5 s
// for the count to reach atLeast.
func (s *Server) Count(t testing.TB, atLeast int, parts ...string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := s.countLines(t, parts...)
		if n >= atLeast || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// seconds renders d for a configuration, in milliseconds.
func millis(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }
