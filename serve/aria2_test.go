package serve_test

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/serve"
)

// aria2c, a Metalink client rsdump did not write, is given only the URL of
// a package's .meta4 on one serve handler. It must take the document for
// a Metalink by its media type, fetch the package in ranges from both
// serve handlers the .meta4 lists, check every piece, and end with the
// package's bytes.
func TestAria2ThroughServe(t *testing.T) {
	t.Parallel()
	aria2, err := exec.LookPath("aria2c")
	if err != nil {
		t.Skip("aria2c not on PATH (apt-get install aria2): Metalink interoperability test skipped")
	}
	tsA, a := listen(t)
	tsB, b := listen(t)
	src := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	data := make([]byte, 6<<20)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	os.WriteFile(filepath.Join(src, "big.bin"), data, 0o644)
	dir := t.TempDir()
	o := pack.Options{BaseURL: "http://127.0.0.1:9/res/", DumpURL: a + "/dump/", Compress: pack.Store,
		Metalink: &pack.MetalinkOptions{PieceLength: 256 << 10, Mirrors: []layout.Mirror{{BaseURL: b + "/dump/", Priority: 1}}}}
	res, err := pack.Pack(context.Background(), src, dir, o)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ranged := map[string]int{}
	for _, s := range []struct {
		ts     *httptest.Server
		url    string
		mirror string
	}{{tsA, a, b}, {tsB, b, a}} {
		h, err := serve.New(dir, serve.Options{DumpURL: s.url + "/dump/", Mirrors: []layout.Mirror{{BaseURL: s.mirror + "/dump/"}}, Log: func(r serve.Request) {
			if strings.HasSuffix(r.Path, ".zip") && r.Status == 206 {
				mu.Lock()
				ranged[s.url]++
				mu.Unlock()
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		s.ts.Config.Handler = h
		s.ts.Start()
	}
	p := res.Packages[0]
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dl := t.TempDir()
	cmd := exec.CommandContext(ctx, aria2, "--no-conf", "-d", dl, a+"/dump/"+p.Metalink,
		"--follow-metalink=true", "--check-integrity=true", "--realtime-chunk-checksum=true",
		"--max-tries=3", "--retry-wait=0", "-x", "4", "-s", "4", "--min-split-size=1M",
		"--file-allocation=none", "--summary-interval=0", "--disable-ipv6=true",
		"--connect-timeout=5", "--timeout=10", "--show-console-readout=false")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("aria2c did not finish in time:\n%s", out)
	}
	if err != nil {
		t.Fatalf("aria2c: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dl, p.Name))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := readFile(t, filepath.Join(dir, p.Name))
	if sha256.Sum256(got) != sha256.Sum256(want) {
		t.Fatal("aria2c's copy differs from the package")
	}
	mu.Lock()
	defer mu.Unlock()
	if ranged[a] == 0 || ranged[b] == 0 {
		t.Errorf("ranged package responses: %v; want some from each serve handler", ranged)
	}
}
