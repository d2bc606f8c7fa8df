// Command serveprof runs what rsdump serve --resources runs (serve.New
// behind serve.NewServer, no request log) under the CPU profiler until
// it is interrupted, for finding where the server spends its time while
// a client fetches a list's resources:
//
//	go run ./benchmarks/serveprof -cpuprofile cpu.out -addr 127.0.0.1:PORT \
//	    -base-url http://127.0.0.1:PORT/res/ -dump-url http://127.0.0.1:PORT/dump/ \
//	    -resources TREE DIR
//	go tool pprof -top cpu.out
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"

	"github.com/rsdump/rsdump/serve"
)

func main() {
	prof := flag.String("cpuprofile", "", "write a CPU profile to `FILE`")
	addr := flag.String("addr", "127.0.0.1:8080", "listen on `ADDR`")
	var opts serve.Options
	flag.StringVar(&opts.BaseURL, "base-url", "", "the resources' base `URL`")
	flag.StringVar(&opts.DumpURL, "dump-url", "", "the documents' base `URL`")
	flag.StringVar(&opts.Resources, "resources", "", "serve the resources in `TREE`")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: serveprof [flags] DIR")
		os.Exit(2)
	}
	if err := run(*prof, *addr, flag.Arg(0), opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(prof, addr, dir string, opts serve.Options) error {
	h, err := serve.New(dir, opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if prof != "" {
		f, err := os.Create(prof)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	srv := serve.NewServer(h, serve.Timeouts{})
	go srv.Serve(serve.Coalesce(ln))
	<-stop
	return srv.Close()
}
