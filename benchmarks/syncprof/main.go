// Command syncprof runs one replica.Sync under the CPU profiler, for
// finding where rsdump sync spends its time:
//
//	go run ./benchmarks/syncprof -cpuprofile cpu.out http://127.0.0.1:PORT/ DIR
//	go tool pprof -top cpu.out
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
)

func main() {
	prof := flag.String("cpuprofile", "", "write a CPU profile of the sync to `FILE`")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: syncprof [-cpuprofile FILE] SOURCE DIR")
		os.Exit(2)
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	src, err := resourcesync.ParseLocation(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	start := time.Now()
	res, err := replica.Sync(context.Background(), src, flag.Arg(1), replica.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Printf("%d packages, %d written, %d bytes, %d problems, %.2f s\n",
		res.Packages, res.Written, res.Bytes, res.Refused, time.Since(start).Seconds())
}
