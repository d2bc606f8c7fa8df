package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/serve"
)

// mirrorPair packs a tree once and serves two copies of the output from
// two loopback servers, A and B, each naming the other with --mirror. With
// metalink, pack writes a .meta4 naming A only: B is known to a client
// only through A's Link headers. It returns the servers' dump URLs, the
// output directory and a counter of package bytes each served.
type mirrorPair struct {
	a, b  string // dump URLs, ending in /dump/
	dir   string
	mu    sync.Mutex
	bytes map[string]int64 // by server dump URL
}

func newMirrorPair(t *testing.T, metalink bool) *mirrorPair {
	t.Helper()
	tsA, tsB := httptest.NewUnstartedServer(nil), httptest.NewUnstartedServer(nil)
	t.Cleanup(tsA.Close)
	t.Cleanup(tsB.Close)
	p := &mirrorPair{a: "http://" + tsA.Listener.Addr().String() + "/dump/", b: "http://" + tsB.Listener.Addr().String() + "/dump/", bytes: map[string]int64{}}
	src := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 6 {
		data := make([]byte, 1<<20+rng.IntN(3<<20))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		os.WriteFile(filepath.Join(src, "f"+string(rune('a'+i))+".bin"), data, 0o644)
	}
	p.dir = t.TempDir()
	o := pack.Options{BaseURL: "http://127.0.0.1:9/res/", DumpURL: p.a, MaxPackageSize: 4 << 20}
	if metalink {
		o.Metalink = &pack.MetalinkOptions{PieceLength: 256 << 10}
	}
	if _, err := pack.Pack(context.Background(), src, p.dir, o); err != nil {
		t.Fatal(err)
	}
	dirB := t.TempDir()
	entries, _ := os.ReadDir(p.dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(p.dir, e.Name()))
		os.WriteFile(filepath.Join(dirB, e.Name()), b, 0o644)
	}
	p.start(t, tsA, p.dir, p.a, p.b)
	p.start(t, tsB, dirB, p.b, p.a)
	return p
}

func (p *mirrorPair) start(t *testing.T, ts *httptest.Server, dir, self, other string) {
	t.Helper()
	h, err := serve.New(dir, serve.Options{DumpURL: self, Mirrors: []layout.Mirror{{BaseURL: other, Priority: 1}}, Log: func(r serve.Request) {
		if strings.HasSuffix(r.Path, ".zip") && r.Method == http.MethodGet {
			p.mu.Lock()
			p.bytes[self] += r.Bytes
			p.mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = h
	ts.Start()
}

func (p *mirrorPair) packages(t *testing.T) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(p.dir, "resourcedump-*.zip"))
	if len(m) < 2 {
		t.Fatalf("%d packages", len(m))
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

func (p *mirrorPair) served() (a, b int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes[p.a], p.bytes[p.b]
}

// rsdump get of a package URL served by serve, with no Metalink anywhere:
// the mirror comes from the Link header and the hash from Digest, so the
// package is fetched from both servers and verified.
func TestGetFromServeUsesHeaders(t *testing.T) {
	t.Parallel()
	p := newMirrorPair(t, false)
	name := p.packages(t)[0]
	out := t.TempDir()
	code, stdout, stderr := rsdump(t, "get", p.a+name, "-o", out, "--json", "--per-mirror", "1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	s := oneGetFile(t, stdout)
	want, _ := os.ReadFile(filepath.Join(p.dir, name))
	got, _ := os.ReadFile(filepath.Join(out, name))
	if !bytes.Equal(got, want) {
		t.Fatal("the copy differs from the package")
	}
	if s.Unverified {
		t.Error("unverified: the Digest header was not used")
	}
	if _, ok := s.Mirrors[p.b+name]; !ok {
		t.Errorf("mirrors %v lack B, named only in A's Link header", s.Mirrors)
	}
	if a, b := p.served(); a == 0 || b == 0 {
		t.Errorf("bytes served: A %d, B %d; want both", a, b)
	}
}

// Two serve handlers over copies of one output, naming each other with
// --mirror, act as mirrors: getting every package from A (its Metalink
// names only A) gives an exact copy with bytes from both.
func TestServeMirrorsExactCopy(t *testing.T) {
	t.Parallel()
	p := newMirrorPair(t, true)
	out := t.TempDir()
	var args []string
	for _, n := range p.packages(t) {
		args = append(args, p.a+n)
	}
	code, _, stderr := rsdump(t, append([]string{"get", "-o", out, "-q", "--per-mirror", "2"}, args...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, n := range p.packages(t) {
		want, _ := os.ReadFile(filepath.Join(p.dir, n))
		got, _ := os.ReadFile(filepath.Join(out, n))
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the copy differs", n)
		}
	}
	if a, b := p.served(); a == 0 || b == 0 {
		t.Errorf("bytes served: A %d, B %d; want both", a, b)
	}
}

// rsdump serve itself: it logs one line per request and stops cleanly
// on cancel (the signal context), exiting 0.
func TestServeCommand(t *testing.T) {
	t.Parallel()
	p := newMirrorPair(t, true)
	var stdout bytes.Buffer
	s := startServe(t, &stdout, p.dir, "--dump-url", "http://127.0.0.1:1/dump/", "--mirror", p.b)
	name := p.packages(t)[0]
	resp, err := http.Get(s.base + "dump/" + name)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Digest") == "" || len(resp.Header.Values("Link")) != 2 {
		t.Errorf("%s, Digest %q, Link %q", resp.Status, resp.Header.Get("Digest"), resp.Header.Values("Link"))
	}
	if !s.lines.Scan() || !strings.Contains(s.lines.Text(), "GET /dump/"+name+" 200 ") {
		t.Errorf("log line %q", s.lines.Text())
	}
	if code := s.stop(t); code != exitOK {
		t.Errorf("exit %d after a clean shutdown", code)
	}
	var anyJSON any
	if json.Unmarshal(stdout.Bytes(), &anyJSON) == nil {
		t.Errorf("stdout %q", stdout.String())
	}
}

// The command's connections have the timeouts its flags give: one that
// sends nothing is let go after --read-header-timeout.
func TestServeTimeouts(t *testing.T) {
	t.Parallel()
	s := startServe(t, io.Discard, t.TempDir(), "--read-header-timeout", "300ms")
	c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(s.base, "http://"), "/"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Errorf("a connection that sent nothing is still open after %s", time.Since(start))
	}
	if code := s.stop(t); code != exitOK {
		t.Errorf("exit %d", code)
	}
}

// served is rsdump serve running in this process.
type served struct {
	base   string // http://127.0.0.1:port/
	lines  *bufio.Scanner
	pr     *io.PipeReader
	cancel context.CancelFunc
	done   chan int
}

// startServe runs rsdump serve DIR args on a free loopback port and
// reads its stderr up to the address it prints.
func startServe(t *testing.T, stdout io.Writer, dir string, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pr, pw := io.Pipe()
	s := &served{lines: bufio.NewScanner(pr), pr: pr, cancel: cancel, done: make(chan int, 1)}
	go func() {
		s.done <- run(ctx, append([]string{"serve", dir, "--addr", "127.0.0.1:0"}, args...), stdout, pw)
		pw.Close()
	}()
	addr := regexp.MustCompile(`serving .* at (http://127\.0\.0\.1:\d+/)`)
	for s.base == "" && s.lines.Scan() {
		if m := addr.FindStringSubmatch(s.lines.Text()); m != nil {
			s.base = m[1]
		}
	}
	if s.base == "" {
		t.Fatal("no address printed")
	}
	return s
}

// stop cancels the command's context, as a signal does, and returns its
// exit code.
func (s *served) stop(t *testing.T) int {
	t.Helper()
	s.cancel()
	go io.Copy(io.Discard, s.pr)
	select {
	case code := <-s.done:
		return code
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	return -1
}

func TestServeUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--help"}, exitOK, "Exit status"},
		{[]string{"serve"}, exitUsage, "one DIR"},
		{[]string{"serve", t.TempDir(), "--base-url", "ftp://x/"}, exitUsage, "--base-url"},
		{[]string{"serve", t.TempDir(), "--mirror", "http://127.0.0.1:1/,priority=0"}, exitUsage, "priority"},
		{[]string{"serve", t.TempDir(), "--resources", t.TempDir()}, exitUsage, "--base-url"},
		{[]string{"serve", filepath.Join(t.TempDir(), "missing")}, exitUsage, "missing"},
		{[]string{"serve", t.TempDir(), "--write-timeout", "0s"}, exitUsage, "--write-timeout"},
	} {
		code, out, errs := rsdump(t, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("rsdump %q: exit %d, want %d; output %q lacks %q", c.args, code, c.code, out+errs, c.want)
		}
	}
}

// The real process: SIGTERM lets a download in flight finish, then the
// command exits 0 and the port is closed.
func TestServeSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and signals a subprocess")
	}
	bin := buildRsdump(t)
	p := newMirrorPair(t, false)
	cmd := exec.Command(bin, "serve", p.dir, "--addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stderr)
	addr := regexp.MustCompile(`serving .* at (http://127\.0\.0\.1:\d+/)`)
	var base string
	for base == "" && lines.Scan() {
		if m := addr.FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatal("no address printed")
	}
	var logged bytes.Buffer
	logDone := make(chan struct{})
	go func() {
		for lines.Scan() {
			logged.WriteString(lines.Text() + "\n")
		}
		close(logDone)
	}()
	name := p.packages(t)[0]
	want, _ := os.ReadFile(filepath.Join(p.dir, name))
	resp, err := http.Get(base + name)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(100 * time.Millisecond)
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(append(first, rest...), want) {
		t.Errorf("the download in flight at SIGTERM: %v, %d bytes of %d", err, 1+len(rest), len(want))
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop after SIGTERM")
	}
	<-logDone
	if !strings.Contains(logged.String(), "shutting down") || !strings.Contains(logged.String(), "GET /"+name+" 200 ") {
		t.Errorf("stderr:\n%s", logged.String())
	}
	if _, err := http.Get(base + name); err == nil {
		t.Error("still answering after exit")
	}
}
