// Command unpackprof runs rsdump's unpack or verify of a dump under the
// CPU profiler, to find where the time of a small-file run goes.
//
//	go run ./benchmarks/unpackprof -cpuprofile cpu.out [-verify] DOC DEST BASEURL
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
)

func main() {
	prof := flag.String("cpuprofile", "", "write a CPU profile to `FILE`")
	ver := flag.Bool("verify", false, "verify DOC instead of unpacking it")
	heap := flag.String("memprofile", "", "write a heap profile to `FILE` after -memafter")
	after := flag.Duration("memafter", 5*time.Second, "when to write the heap profile")
	flag.Parse()
	if *heap != "" {
		time.AfterFunc(*after, func() {
			f, err := os.Create(*heap)
			if err != nil {
				fail(err)
			}
			runtime.GC()
			pprof.WriteHeapProfile(f)
			f.Close()
		})
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			fail(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	if *ver {
		s, err := verify.Verify(ctx, flag.Args()[:1], verify.Options{})
		if err != nil {
			fail(err)
		}
		fmt.Printf("%+v\n", *s)
		return
	}
	m, err := deststate.NewMapper(deststate.ByURI, flag.Arg(2))
	if err != nil {
		fail(err)
	}
	r, err := unpack.Unpack(ctx, flag.Arg(0), flag.Arg(1), unpack.Options{Mapper: m})
	if err != nil {
		fail(err)
	}
	fmt.Printf("%+v\n", *r)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
