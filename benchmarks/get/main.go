// Command get benchmarks `rsdump get` against aria2c on loopback: three
// fake mirrors (127.0.0.1, .2, .3, since aria2 counts connections per host
// name) serve one random file with per-mirror bandwidth caps, latency and
// faults; both tools fetch the same .meta4 (sha-256 pieces of 1 MiB) in the
// same run, and the medians of several runs are printed as markdown.
//
// Usage: go run ./benchmarks/get [-size MiB] [-runs N] [-only a,b] [-dir DIR]
//
//	[-baseline OLD-RSDUMP -tools rsdump,baseline,aria2c]
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rsdump/rsdump/metalink"
)

func main() {
	size := flag.Int64("size", 1024, "file size in MiB")
	runs := flag.Int("runs", 3, "runs per tool and scenario")
	only := flag.String("only", "", "comma-separated scenario names (default: all)")
	dir := flag.String("dir", "/tmp/rsdump-bench-get", "work directory")
	rsdump := flag.String("rsdump", "", "rsdump binary (default: build ./cmd/rsdump)")
	base := flag.String("baseline", "", "an older rsdump binary, run as the tool \"baseline\" (add it to -tools)")
	tools := flag.String("tools", "rsdump,aria2c", "tools to run")
	port := flag.Int("port", 18481, "the mirrors' port on 127.0.0.1-3 (another session may hold the default)")
	flag.Parse()
	for i := range mirrorAddrs {
		mirrorAddrs[i] = fmt.Sprintf("127.0.0.%d:%d", i+1, *port)
	}
	log.SetFlags(log.Ltime)
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		log.Fatal(err)
	}
	bin := *rsdump
	if bin == "" {
		bin = filepath.Join(*dir, "rsdump")
		if out, err := exec.Command("go", "build", "-o", bin, "./cmd/rsdump").CombinedOutput(); err != nil {
			log.Fatalf("go build: %v\n%s", err, out)
		}
	}
	src := filepath.Join(*dir, fmt.Sprintf("src-%dMiB.bin", *size))
	sum, err := ensureFile(src, *size<<20)
	if err != nil {
		log.Fatal(err)
	}
	meta := filepath.Join(*dir, "big.meta4")
	if err := writeMeta4(meta, src, sum, *size<<20); err != nil {
		log.Fatal(err)
	}
	b := &bench{dir: *dir, src: src, sum: sum, size: *size << 20, meta: meta, rsdump: bin, baseline: *base, runs: *runs,
		tools: strings.Split(*tools, ",")}
	for _, sc := range scenarios() {
		if *only != "" && !strings.Contains(","+*only+",", ","+sc.name+",") {
			continue
		}
		b.scenario(sc)
	}
	b.report(os.Stdout)
}

// ensureFile creates size random bytes once and returns their sha-256.
func ensureFile(path string, size int64) (string, error) {
	if fi, err := os.Stat(path); err != nil || fi.Size() != size {
		log.Printf("writing %s", path)
		f, err := os.Create(path)
		if err != nil {
			return "", err
		}
		r := rand.NewChaCha8([32]byte{42})
		if _, err := io.CopyN(f, r, size); err != nil {
			return "", err
		}
		if err := f.Close(); err != nil {
			return "", err
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeMeta4 lists the three mirrors with sha-256 pieces of 1 MiB.
func writeMeta4(path, src, sum string, size int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	ph, err := metalink.NewPieceHasher("sha-256", 1<<20)
	if err != nil {
		return err
	}
	io.Copy(ph, f)
	mf := metalink.File{Name: "big.bin", Size: &size, Hashes: []metalink.Hash{{Type: "sha-256", Value: sum}},
		Pieces: []metalink.Pieces{ph.Pieces()}}
	for i, a := range mirrorAddrs {
		mf.URLs = append(mf.URLs, metalink.URL{URL: "http://" + a + "/big.bin", Priority: i + 1})
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := metalink.Encode(out, &metalink.Metalink{Files: []metalink.File{mf}}); err != nil {
		return err
	}
	return out.Close()
}
