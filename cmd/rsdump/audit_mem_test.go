package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/internal/racetest"
)

// auditMemLimit is what a million tiny files may take of memory at peak
// (issue 43: under 300 MiB).
const auditMemLimit = 300 << 20

// TestAuditMillionFilesMemory: rsdump audit of a copy of 1,000,000 tiny
// files (RSDUMP_AUDIT_FILES sets another count), run as the command runs
// (the soft memory limit main sets), in a process of its own whose peak
// RSS the kernel reports: under 300 MiB. Slow (about ten minutes on a
// loaded 2-core machine, most of it making the files), so not with
// -short, nor under -race, which inflates RSS.
func TestAuditMillionFilesMemory(t *testing.T) {
	switch {
	case testing.Short():
		t.Skip("a million files: minutes; not with -short")
	case racetest.Enabled:
		t.Skip("the race detector's shadow memory inflates RSS several times: run without -race")
	}
	if dir := os.Getenv("RSDUMP_AUDIT_MEM_DIR"); dir != "" { // the child
		debug.SetMemoryLimit(softMemoryLimit)
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"audit", dir, "-q"}, &out, &errb); code != 0 {
			t.Fatalf("audit: exit %d\n%s\n%s", code, out.String(), errb.String())
		}
		fmt.Print(out.String())
		return
	}
	n := 1_000_000
	if s := os.Getenv("RSDUMP_AUDIT_FILES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	dir := t.TempDir()
	start := time.Now()
	makeTinyCopy(t, dir, n)
	t.Logf("made a copy of %d files in %s", n, time.Since(start).Round(time.Second))
	start = time.Now()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAuditMillionFilesMemory$", "-test.v")
	cmd.Env = append(os.Environ(), "RSDUMP_AUDIT_MEM_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	peak := int64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) << 10 // KiB on Linux
	t.Logf("audit of %d files: %s, peak RSS %.1f MiB\n%s", n, time.Since(start).Round(time.Second), float64(peak)/(1<<20), bytes.TrimSpace(out))
	if !bytes.Contains(out, []byte(fmt.Sprintf("audited %d of %d files", n, n))) {
		t.Errorf("the audit did not check every file:\n%s", out)
	}
	if peak > auditMemLimit {
		t.Errorf("peak RSS %.1f MiB, over %d MiB", float64(peak)/(1<<20), auditMemLimit>>20)
	}
}

// makeTinyCopy writes n files of a few bytes in directories of 1,000
// (four directories at once), and the written log's record of each, as
// a sync leaves them.
func makeTinyCopy(t *testing.T, dir string, n int) {
	d, err := deststate.Open(dir, deststate.Options{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var g errgroup.Group
	g.SetLimit(4)
	var logMu sync.Mutex // an Append writes its lines in several writes
	for first := 0; first < n; first += 1000 {
		g.Go(func() error {
			var recs []deststate.Record
			for i := first; i < min(first+1000, n); i++ {
				rel := fmt.Sprintf("d%04d/f%06d.txt", i/1000, i)
				if i == first {
					os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755)
				}
				data := []byte(strconv.Itoa(i * 7919))
				if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
					return err
				}
				sum := sha256.Sum256(data)
				recs = append(recs, deststate.Record{Path: rel, Length: int64(len(data)), Hash: "sha-256:" + hex.EncodeToString(sum[:])})
			}
			logMu.Lock()
			defer logMu.Unlock()
			return d.Append(recs)
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}
