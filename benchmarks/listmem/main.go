// Command listmem measures the memory unpack.ApplyList (what rsdump sync
// runs on a Source with no dump) takes to apply a large Resource List or
// Change List, for benchmarks/README.md.
//
//	go run ./benchmarks/listmem gen -n 805000 WORK
//	go run ./benchmarks/listmem apply WORK
//
// gen writes WORK/list: a Resource List index over parts of 50,000
// entries, and a Change List index of the same entries as updates; and
// WORK/dest, a tree holding every resource (a few bytes each), so that
// apply finds them all present and measures the list, not the network. It
// also writes WORK/src/r, the same resources (-src=false for none), for
// `apply -dest EMPTY` against a loopback server of WORK/src
// (benchmarks/fileserve on its default address) into an empty
// destination.
//
// apply runs ApplyList of WORK/list/resourcelist.xml (-list changelist.xml
// for the Change List) into WORK/dest (-dest DIR for another) under the
// CLI's soft memory limit, samples the heap in use every 5 ms, and prints
// a line: the list, the counts, the time, the peak heap in use and the
// process's peak RSS (VmHWM), tab-separated. -fresh starts from a
// destination with no state (a Resource List is refused over a tree
// whose state is later than its at), adopting the files there. Run each apply in a process
// of its own: gen's memory is not apply's. benchmarks/listmem.sh runs
// it before and after a change, side by side.
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// base is the URI prefix of the resources: benchmarks/fileserve's default
// address, so that -base is only needed for another.
const base = "http://127.0.0.1:18490/"

func main() {
	if len(os.Args) < 2 {
		fail("usage: listmem gen [-n N] WORK | listmem apply [-list NAME] [-dest DIR] [-base URL] WORK")
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "apply":
		err = apply(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "listmem:", msg)
	os.Exit(1)
}

// at is the lists' time; the changes are a second later.
var at = time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)

func name(i int) string { return fmt.Sprintf("d%04d/f%07d.txt", i/1000, i) }

func content(i int) []byte { return []byte(fmt.Sprintf("resource %d\n", i)) }

func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	n := fs.Int("n", 805000, "entries")
	src := fs.Bool("src", true, "also write WORK/src/r, for a loopback server")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return fmt.Errorf("gen takes WORK")
	}
	work := fs.Arg(0)
	trees := []string{"dest"}
	if *src {
		trees = append(trees, "src/r")
	}
	if err := os.MkdirAll(filepath.Join(work, "list"), 0o755); err != nil {
		return err
	}
	for _, tree := range trees {
		if err := writeTree(filepath.Join(work, tree), *n); err != nil {
			return err
		}
	}
	if err := writeList(filepath.Join(work, "list"), resourcesync.CapResourceList, *n); err != nil {
		return err
	}
	return writeList(filepath.Join(work, "list"), resourcesync.CapChangeList, *n)
}

func writeTree(dir string, n int) error {
	for i := range n {
		p := filepath.Join(dir, filepath.FromSlash(name(i)))
		if i%1000 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(p, content(i), 0o644); err != nil {
			return err
		}
		if err := os.Chtimes(p, at, at); err != nil {
			return err
		}
	}
	return nil
}

// writeList writes CAP.xml, an index, and CAP-partNNNNN.xml beside it.
func writeList(dir, capability string, n int) error {
	md := resourcesync.MD{Capability: capability, At: at}
	if capability == resourcesync.CapChangeList {
		md = resourcesync.MD{Capability: capability, From: at, Until: at.Add(time.Second)}
	}
	var parts []string
	for first := 0; first < n; first += resourcesync.MaxEntries {
		part := fmt.Sprintf("%s-part%05d.xml", capability, len(parts)+1)
		if err := writePart(filepath.Join(dir, part), md, first, min(n, first+resourcesync.MaxEntries)); err != nil {
			return err
		}
		parts = append(parts, part)
	}
	return writeDoc(filepath.Join(dir, capability+".xml"), resourcesync.Header{Kind: resourcesync.SitemapIndex, MD: md}, func(e *resourcesync.Encoder) error {
		for _, p := range parts {
			if err := e.Encode(resourcesync.URL{Loc: base + "list/" + p}); err != nil {
				return err
			}
		}
		return nil
	})
}

func writePart(file string, md resourcesync.MD, first, end int) error {
	return writeDoc(file, resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, func(e *resourcesync.Encoder) error {
		for i := first; i < end; i++ {
			c := content(i)
			sum := sha256.Sum256(c)
			emd := &resourcesync.MD{Hash: "sha-256:" + hex.EncodeToString(sum[:]), Length: resourcesync.Int64(int64(len(c))), Type: "text/plain"}
			if md.Capability == resourcesync.CapChangeList {
				emd.Change, emd.Datetime = resourcesync.ChangeUpdated, at.Add(time.Second)
			}
			if err := e.Encode(resourcesync.URL{Loc: base + "r/" + name(i), Lastmod: at, MD: emd}); err != nil {
				return err
			}
		}
		return nil
	})
}

func writeDoc(file string, h resourcesync.Header, body func(*resourcesync.Encoder) error) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	e, err := resourcesync.NewEncoder(w, h)
	if err == nil {
		err = body(e)
	}
	if err == nil {
		err = e.Close()
	}
	if err == nil {
		err = w.Flush()
	}
	return err
}

func apply(args []string) error {
	fs := flag.NewFlagSet("apply", flag.ExitOnError)
	list := fs.String("list", "resourcelist.xml", "the list in WORK/list to apply")
	dest := fs.String("dest", "", "the destination (default WORK/dest)")
	limit := fs.Int64("memlimit", 200<<20, "soft memory limit in bytes, as the CLI sets (0: none)")
	fresh := fs.Bool("fresh", false, "first remove the destination's state (DEST/.rsdump), and adopt the files there")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return fmt.Errorf("apply takes WORK")
	}
	work := fs.Arg(0)
	if *dest == "" {
		*dest = filepath.Join(work, "dest")
	}
	if *fresh {
		if err := os.RemoveAll(filepath.Join(*dest, ".rsdump")); err != nil {
			return err
		}
	}
	if *limit > 0 {
		debug.SetMemoryLimit(*limit)
	}
	m, err := deststate.NewMapper(deststate.ByURI, base+"r/")
	if err != nil {
		return err
	}
	var peak atomic.Uint64
	stop := sample(&peak)
	start := time.Now()
	res, err := unpack.ApplyList(context.Background(), filepath.Join(work, "list", *list), *dest, unpack.Options{Mapper: m, Adopt: *fresh})
	el := time.Since(start)
	stop()
	if err != nil {
		return err
	}
	fmt.Printf("%s\t%d present\t%d written\t%d problems\t%.1f s\t%d MB heap\t%d MB RSS\n",
		*list, res.Present, res.Written, res.Problems(), el.Seconds(), peak.Load()>>20, vmHWM()>>10)
	return nil
}

// sample records the largest HeapInuse seen until stop is called.
func sample(peak *atomic.Uint64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

// vmHWM is the process's peak resident set in KiB, from
// /proc/self/status; 0 where there is none.
func vmHWM() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}
