package metalink_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/pack"
)

// The interoperability tests hand rsdump's Metalink to aria2c, which
// downloads the package from local mirrors and checks every 64 KiB piece
// as it arrives (--realtime-chunk-checksum). A wrong piece hash would fail
// every download; one mirror serving corrupted bytes shows that aria2c
// catches each bad piece with rsdump's hashes and fetches it again.

const ariaPiece = 64 << 10

// badChunk is what aria2c logs (at level info) when a piece does not
// match its hash.
const badChunk = "Chunk checksum validation failed"

func ariaPieces(t *testing.T, pkg string) int {
	st, err := os.Stat(pkg)
	if err != nil {
		t.Fatal(err)
	}
	return int((st.Size() + ariaPiece - 1) / ariaPiece)
}

// mirror serves the files of dir over HTTP with Range support. A corrupt
// mirror flips one byte in the body of every response it sends.
type mirror struct {
	srv       *httptest.Server
	dir       string
	corrupt   bool
	requests  atomic.Int64
	corrupted atomic.Int64
}

func newMirror(t *testing.T, dir string, corrupt bool) *mirror {
	m := &mirror{dir: dir, corrupt: corrupt}
	m.srv = httptest.NewServer(m) // listens on 127.0.0.1 only
	t.Cleanup(m.srv.Close)
	return m
}

func (m *mirror) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.requests.Add(1)
	f, err := os.Open(filepath.Join(m.dir, path.Base(r.URL.Path)))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	http.ServeContent(&mirrorWriter{ResponseWriter: w, m: m, flip: m.corrupt}, r, st.Name(), st.ModTime(), f)
}

// mirrorWriter sends the body at about 8 MB/s, so that aria2c opens
// connections to several mirrors before one has sent everything, and, for
// a corrupt mirror, flips a byte in the first body bytes of the response.
type mirrorWriter struct {
	http.ResponseWriter
	m    *mirror
	flip bool
}

func (w *mirrorWriter) Write(b []byte) (int, error) {
	if w.flip && len(b) > 0 {
		w.flip = false
		w.m.corrupted.Add(1)
		b = bytes.Clone(b)
		b[len(b)/2] ^= 0xff
	}
	n := 0
	for len(b) > 0 {
		k := min(len(b), 16<<10)
		time.Sleep(2 * time.Millisecond)
		k, err := w.ResponseWriter.Write(b[:k])
		n += k
		if err != nil {
			return n, err
		}
		b = b[k:]
	}
	return n, nil
}

func aria2c(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("aria2c")
	if err != nil {
		t.Skip("aria2c not on PATH (apt-get install aria2): Metalink interoperability test skipped")
	}
	return p
}

// packWithMirrors packs about 2 MiB of random data into one package
// published at three mirrors, the first of them the dump URL, and returns
// the package's path and its .meta4.
func packWithMirrors(t *testing.T, out string, ms []*mirror) (pkg, meta4 string) {
	t.Helper()
	src := t.TempDir()
	rng := rand.New(rand.NewPCG(10, 11))
	for i := range 4 {
		b := make([]byte, 2_000_000+i*1000)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if err := os.WriteFile(filepath.Join(src, "f"+string(rune('a'+i))+".bin"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := pack.Options{BaseURL: "http://127.0.0.1/rs/", DumpURL: ms[0].srv.URL + "/", Compress: pack.Store,
		Metalink: &pack.MetalinkOptions{PieceLength: ariaPiece}}
	for i, m := range ms[1:] {
		o.Metalink.Mirrors = append(o.Metalink.Mirrors, layout.Mirror{BaseURL: m.srv.URL, Priority: i + 2})
	}
	res, err := pack.Pack(context.Background(), src, out, o)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Packages[0]
	return filepath.Join(out, p.Name), filepath.Join(out, p.Metalink)
}

// download runs aria2c on meta4 into a new directory, bounded in time,
// and returns the path of the downloaded file and aria2c's log.
func download(t *testing.T, aria2, meta4, name string) (string, string) {
	t.Helper()
	p, log, err := runAria2(t, aria2, meta4, name)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	return p, log
}

func runAria2(t *testing.T, aria2, meta4, name string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dl, logFile := t.TempDir(), filepath.Join(t.TempDir(), "aria2.log")
	cmd := exec.CommandContext(ctx, aria2, "--no-conf", "--metalink-file="+meta4, "-d", dl,
		"--check-integrity=true", "--realtime-chunk-checksum=true", "--allow-overwrite=true",
		"--max-tries=3", "--retry-wait=0", "-x", "3", "-s", "3", "--min-split-size=1M",
		"--file-allocation=none", "--console-log-level=notice", "--summary-interval=0",
		"--metalink-preferred-protocol=none", "--disable-ipv6=true", "--connect-timeout=5", "--timeout=10",
		"--stop=80", "--show-console-readout=false", "-l", logFile, "--log-level=info")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("aria2c did not finish in time:\n%s", out)
	}
	if err != nil {
		err = fmt.Errorf("aria2c: %v\n%s", err, out)
	}
	log, rerr := os.ReadFile(logFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	return filepath.Join(dl, name), string(log), err
}

func fileSHA256(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestAria2Download: three good mirrors; every piece checks out and the
// file ends with the right sha-256, fetched from more than one mirror.
func TestAria2Download(t *testing.T) {
	t.Parallel()
	aria2 := aria2c(t)
	out := t.TempDir()
	ms := []*mirror{newMirror(t, out, false), newMirror(t, out, false), newMirror(t, out, false)}
	pkg, meta4 := packWithMirrors(t, out, ms)
	got, log := download(t, aria2, meta4, filepath.Base(pkg))
	if fileSHA256(t, got) != fileSHA256(t, pkg) {
		t.Fatalf("downloaded file differs from the package\n%s", log)
	}
	if n := strings.Count(log, "Good chunk checksum"); n != ariaPieces(t, pkg) || strings.Contains(log, badChunk) {
		t.Errorf("aria2c checked %d good pieces of %d, or found a bad one, with good mirrors", n, ariaPieces(t, pkg))
	}
	used := 0
	for _, m := range ms {
		if m.requests.Load() > 0 {
			used++
		}
	}
	if used < 2 {
		t.Errorf("aria2c used %d mirror(s), want at least 2", used)
	}
}

// TestAria2CorruptMirror: the preferred mirror corrupts every response.
// aria2c must detect the bad pieces with rsdump's piece hashes and still
// end with the right file. The document comes once from pack and once
// from FileFromReader, the path `rsdump metalink FILE` takes.
func TestAria2CorruptMirror(t *testing.T) {
	t.Parallel()
	aria2 := aria2c(t)
	out := t.TempDir()
	ms := []*mirror{newMirror(t, out, true), newMirror(t, out, false), newMirror(t, out, false)}
	pkg, packMeta4 := packWithMirrors(t, out, ms)
	docs := map[string]string{"pack": packMeta4, "FileFromReader": fromReader(t, pkg, ms)}
	for name, meta4 := range docs {
		t.Run(name, func(t *testing.T) {
			before := ms[0].corrupted.Load()
			got, log := download(t, aria2, meta4, filepath.Base(pkg))
			if ms[0].corrupted.Load() == before {
				t.Fatalf("the corrupt mirror served nothing: the test proves nothing\n%s", log)
			}
			if fileSHA256(t, got) != fileSHA256(t, pkg) {
				t.Fatalf("downloaded file differs from the package\n%s", log)
			}
			if !strings.Contains(log, badChunk) {
				t.Errorf("aria2c's log shows no failed piece check, yet the mirror corrupted data")
			}
			t.Logf("corrupt mirror: %d corrupted responses; aria2c recovered", ms[0].corrupted.Load()-before)
		})
	}
}

// TestAria2WrongPieceHash is the control: with one wrong piece hash in
// the document and good mirrors, aria2c must fail, which shows that it
// really checks the piece hashes the other tests give it.
func TestAria2WrongPieceHash(t *testing.T) {
	t.Parallel()
	aria2 := aria2c(t)
	out := t.TempDir()
	ms := []*mirror{newMirror(t, out, false), newMirror(t, out, false), newMirror(t, out, false)}
	pkg, _ := packWithMirrors(t, out, ms)
	meta4 := fromReader(t, pkg, ms, func(f *metalink.File) {
		f.Pieces[0].Hashes[1] = f.Pieces[0].Hashes[0] // well-formed, but piece 0's
	})
	_, log, err := runAria2(t, aria2, meta4, filepath.Base(pkg))
	if err == nil {
		t.Fatalf("aria2c accepted a piece that does not match its hash")
	}
	if !strings.Contains(log, badChunk) {
		t.Errorf("aria2c failed, but not on the piece check: %v", err)
	}
}

// fromReader writes a .meta4 for pkg with FileFromReader and the Encoder,
// listing the mirrors in order with priorities 1, 2, 3.
func fromReader(t *testing.T, pkg string, ms []*mirror, edit ...func(*metalink.File)) string {
	t.Helper()
	f, err := os.Open(pkg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mf, err := metalink.FileFromReader(filepath.Base(pkg), f, ariaPiece)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		mf.URLs = append(mf.URLs, metalink.URL{URL: m.srv.URL + "/" + mf.Name, Priority: i + 1})
	}
	for _, fn := range edit {
		fn(mf)
	}
	var buf bytes.Buffer
	e, err := metalink.NewEncoder(&buf, &metalink.Metalink{Generator: "rsdump"})
	if err == nil {
		err = e.Encode(mf)
	}
	if err == nil {
		err = e.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "reader.meta4")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
