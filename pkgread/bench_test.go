//go:build unix

package pkgread_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// smallFiles is a package of 50,000 stored files of 41 bytes, manifest.xml
// last, as pack writes a package of small files; built once.
var smallFiles = sync.OnceValue(func() []byte {
	t := &testing.B{}
	var entries []verifytest.Entry
	var urls []resourcesync.URL
	for i := range 50_000 {
		f := verifytest.File{Rel: fmt.Sprintf("a%02d/r%07d.txt", i%100, i), Data: fmt.Sprintf("record %07d of the small-file benchmark\n", i)}
		entries = append(entries, verifytest.Entry{Name: "resources/" + f.Rel, Data: []byte(f.Data), Method: zip.Store})
		urls = append(urls, verifytest.URLFor(f, "/resources/"))
	}
	m := verifytest.Manifest(t, verifytest.ResourceMD(), urls)
	return verifytest.Zip(t, append(entries, verifytest.Entry{Name: "manifest.xml", Data: m, Method: zip.Deflate}))
})

// BenchmarkReadSmallFiles is verify's work on a package of small files:
// open it, read every bitstream, check the layout. cpu-ns/op is the
// process's CPU time (every thread, the GC's too), steadier than the wall
// time on a loaded machine.
func BenchmarkReadSmallFiles(b *testing.B) {
	z := smallFiles()
	b.SetBytes(int64(len(z)))
	start := cpuTime()
	for b.Loop() {
		rep := finding.NewReporter(nil)
		p, err := pkgread.OpenPackage(bytes.NewReader(z), int64(len(z)), "p.zip", "", pkgread.Limits{}, rep)
		if err != nil {
			b.Fatal(err)
		}
		for _, bs := range p.InZipOrder() {
			p.Read(bs, io.Discard)
		}
		p.CheckLayout()
		if c := rep.Counts(); c.Errors > 0 {
			b.Fatalf("%+v", c)
		}
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
