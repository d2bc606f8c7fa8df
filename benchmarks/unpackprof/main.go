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
	"runtime/pprof"

	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
)

func main() {
	prof := flag.String("cpuprofile", "", "write a CPU profile to `FILE`")
	ver := flag.Bool("verify", false, "verify DOC instead of unpacking it")
	flag.Parse()
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
	m, err := verify.NewMapper(verify.ByURI, flag.Arg(2))
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
