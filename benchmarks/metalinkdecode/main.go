// Command metalinkdecode times metalink.Decode on one document, for
// benchmarks/metalink.sh, which runs it under /usr/bin/time for the peak
// RSS. With -gen it writes the test document instead: one file with N
// sha-256 piece hashes of 256 KiB.
//
//	metalinkdecode FILE
//	metalinkdecode -gen N OUT
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/rsdump/rsdump/metalink"
)

func main() {
	gen := flag.Bool("gen", false, "write a document with N piece hashes to OUT instead of decoding")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the decode to `FILE`")
	flag.Parse()
	if *prof != "" {
		stop, err := startProfile(*prof)
		if err != nil {
			fmt.Fprintln(os.Stderr, "metalinkdecode:", err)
			os.Exit(1)
		}
		defer stop()
	}
	var err error
	switch {
	case *gen && flag.NArg() == 2:
		err = generate(flag.Arg(0), flag.Arg(1))
	case !*gen && flag.NArg() == 1:
		err = decode(flag.Arg(0))
	default:
		fmt.Fprintln(os.Stderr, "usage: metalinkdecode FILE | metalinkdecode -gen N OUT")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "metalinkdecode:", err)
		os.Exit(1)
	}
}

func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func decode(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	start := time.Now()
	m, ps, err := metalink.Decode(f)
	elapsed := time.Since(start)
	if m == nil {
		return err
	}
	pieces := 0
	for _, file := range m.Files {
		for _, p := range file.Pieces {
			pieces += len(p.Hashes)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("%s: %d files, %d piece hashes, %d problems, decode %.3f s, Go heap in use %d MB\n",
		path, len(m.Files), pieces, len(ps), elapsed.Seconds(), ms.HeapInuse>>20)
	return nil
}

// generate writes one <file> of n pieces with the streaming Encoder; the
// hashes are sha-256 of the piece numbers, so the document is the same
// on every run.
func generate(nArg, out string) error {
	n, err := strconv.Atoi(nArg)
	if err != nil || n < 1 {
		return fmt.Errorf("bad piece count %q", nArg)
	}
	const length = 256 << 10
	size := int64(n) * length
	hs := make([]string, n)
	var buf [8]byte
	for i := range hs {
		binary.BigEndian.PutUint64(buf[:], uint64(i))
		sum := sha256.Sum256(buf[:])
		hs[i] = hex.EncodeToString(sum[:])
	}
	file := metalink.File{
		Name:   "big.zip",
		Size:   &size,
		Hashes: []metalink.Hash{{Type: "sha-256", Value: hs[0]}},
		Pieces: []metalink.Pieces{{Type: "sha-256", Length: length, Hashes: hs}},
		URLs:   []metalink.URL{{URL: "https://example.org/big.zip", Priority: 1}},
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = metalink.Encode(w, &metalink.Metalink{Generator: "rsdump", Files: []metalink.File{file}})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
