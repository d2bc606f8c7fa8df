// Command limits measures what this machine can do at most, for the
// benchmark tables: sha-256 throughput on all cores (each core hashing its
// own buffer, as pack's workers do).
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"runtime"
	"sync"
	"time"
)

func main() {
	mib := flag.Int("mib", 1024, "MiB hashed per core")
	flag.Parse()
	cores := runtime.GOMAXPROCS(0)
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range cores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := sha256.New()
			for range *mib {
				h.Write(buf)
			}
			h.Sum(nil)
		}()
	}
	wg.Wait()
	total := float64(cores**mib) * (1 << 20)
	fmt.Printf("%.0f\n", total/1e6/time.Since(start).Seconds())
}
