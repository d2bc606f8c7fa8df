package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	mt "github.com/rsdump/rsdump/internal/mirrortest"
)

var mirrorAddrs = []string{"127.0.0.1:18481", "127.0.0.2:18481", "127.0.0.3:18481"}

const mb = 1e6

// scenario is one mirror setup; ceiling is the sum of the live mirrors'
// caps in MB/s (0 = uncapped).
type scenario struct {
	name, desc string
	mirrors    [3][]mt.Option
	dead       [3]bool
	kill       bool
	ceiling    float64
}

func scenarios() []scenario {
	cap40 := []mt.Option{mt.RateLimit(40 * mb), mt.Latency(20 * time.Millisecond)}
	with := func(extra ...mt.Option) []mt.Option { return append(slices.Clone(cap40), extra...) }
	healthy := [3][]mt.Option{cap40, cap40, cap40}
	return []scenario{
		{name: "healthy", desc: "3 mirrors, 40 MB/s each, 20 ms latency", mirrors: healthy, ceiling: 120},
		{name: "corrupt", desc: "as healthy; mirror 1 flips a byte in 5% of its 1 MiB blocks",
			mirrors: [3][]mt.Option{with(mt.Corrupt(0.05, 1<<20)), cap40, cap40}, ceiling: 120},
		{name: "dead503", desc: "mirror 1 refuses connections, mirror 2 answers 503 to 30% of requests",
			mirrors: [3][]mt.Option{nil, with(mt.Status(503, 0.3, ""), mt.Seed(7)), cap40}, dead: [3]bool{true}, ceiling: 80},
		{name: "dropstall", desc: "mirror 1 drops connections (1%/MiB), mirror 2 stalls 10 s (1%/MiB)",
			mirrors: [3][]mt.Option{with(mt.DropRate(0.01), mt.Seed(3)), with(mt.StallRate(0.01, 10*time.Second), mt.Seed(5)), cap40}, ceiling: 120},
		{name: "kill50", desc: "as healthy; SIGKILL at 50% of the bytes served, then the same command again",
			mirrors: healthy, kill: true, ceiling: 120},
		{name: "uncapped", desc: "3 mirrors, no cap, no latency (loopback; the mirrors share the 2 cores)",
			mirrors: [3][]mt.Option{nil, nil, nil}},
	}
}

// mirrorSet is one run's servers.
type mirrorSet struct {
	servers []*http.Server
	ms      []*mt.Mirror
}

func startMirrors(src *os.File, size int64, sc scenario) (*mirrorSet, error) {
	s := &mirrorSet{}
	for i, addr := range mirrorAddrs {
		if sc.dead[i] {
			continue
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			s.close()
			return nil, err
		}
		m := mt.New(io.NewSectionReader(src, 0, size), size, "big.bin", sc.mirrors[i]...)
		srv := &http.Server{Handler: m}
		go srv.Serve(l)
		s.servers, s.ms = append(s.servers, srv), append(s.ms, m)
	}
	return s, nil
}

func (s *mirrorSet) served() int64 {
	var n int64
	for _, m := range s.ms {
		n += m.Bytes.Load()
	}
	return n
}

func (s *mirrorSet) close() {
	for _, srv := range s.servers {
		srv.Close()
	}
}

// sample is one run of one tool.
type sample struct {
	wall, cpu time.Duration
	sys       time.Duration
	rssKB     int64
	served    int64
	ok        bool
	err       string
}

type bench struct {
	dir, src, sum, meta, rsdump string
	baseline                    string // an older rsdump, the tool "baseline"
	size                        int64
	runs                        int
	tools                       []string
	results                     []result
}

type result struct {
	sc      scenario
	tool    string
	samples []sample
}

func (b *bench) scenario(sc scenario) {
	for i := range b.runs {
		for _, tool := range b.tools { // interleaved, so load from others hits both
			s := b.run(tool, sc)
			log.Printf("%s %s run %d: %.2fs ok=%v served=%.1f%% cpu=%.2fs (sys %.2fs) rss=%dMB %s", sc.name, tool, i+1,
				s.wall.Seconds(), s.ok, 100*float64(s.served)/float64(b.size), s.cpu.Seconds(), s.sys.Seconds(), s.rssKB/1024, s.err)
			b.add(sc, tool, s)
		}
	}
}

func (b *bench) add(sc scenario, tool string, s sample) {
	for i := range b.results {
		if b.results[i].sc.name == sc.name && b.results[i].tool == tool {
			b.results[i].samples = append(b.results[i].samples, s)
			return
		}
	}
	b.results = append(b.results, result{sc: sc, tool: tool, samples: []sample{s}})
}

func (b *bench) command(tool, out string, resume bool) *exec.Cmd {
	switch tool {
	case "rsdump":
		return exec.Command(b.rsdump, "get", b.meta, "-o", out, "-q")
	case "baseline":
		return exec.Command(b.baseline, "get", b.meta, "-o", out, "-q")
	}
	args := []string{"--metalink-file=" + b.meta, "-d", out, "-x2", "-s6", "-k1M", "--file-allocation=none",
		"--check-integrity=true", "--console-log-level=error", "--summary-interval=0", "--auto-file-renaming=false",
		"--allow-overwrite=true"}
	if resume {
		args = append(args, "--continue=true")
	}
	return exec.Command("aria2c", args...)
}

func (b *bench) run(tool string, sc scenario) sample {
	out := filepath.Join(b.dir, "out-"+tool)
	os.RemoveAll(out)
	os.MkdirAll(out, 0o755)
	defer os.RemoveAll(out)
	src, err := os.Open(b.src)
	if err != nil {
		return sample{err: err.Error()}
	}
	defer src.Close()
	ms, err := startMirrors(src, b.size, sc)
	if err != nil {
		return sample{err: err.Error()}
	}
	defer ms.close()
	var s sample
	if sc.kill {
		s = b.killRun(tool, out, ms)
	} else {
		s = measure(b.command(tool, out, false), nil)
	}
	s.served = ms.served()
	if s.err == "" {
		s.ok, s.err = b.check(filepath.Join(out, "big.bin"))
	}
	return s
}

// killRun SIGKILLs the tool once half the file has been served and runs
// the same command again; times and CPU are the sums of both runs.
func (b *bench) killRun(tool, out string, ms *mirrorSet) sample {
	first := measure(b.command(tool, out, false), func(p *os.Process) {
		for ms.served() < b.size/2 {
			time.Sleep(2 * time.Millisecond)
		}
		p.Signal(syscall.SIGKILL)
	})
	second := measure(b.command(tool, out, true), nil)
	second.wall += first.wall
	second.cpu += first.cpu
	second.sys += first.sys
	second.rssKB = max(first.rssKB, second.rssKB)
	return second
}

// measure runs cmd; during, if set, runs while it does.
func measure(cmd *exec.Cmd, during func(*os.Process)) sample {
	var errb limitedBuffer
	cmd.Stderr, cmd.Stdout = &errb, &errb
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{err: err.Error()}
	}
	if during != nil {
		go during(cmd.Process)
	}
	go func() { <-ctx.Done(); cmd.Process.Kill() }()
	err := cmd.Wait()
	s := sample{wall: time.Since(start)}
	if ps := cmd.ProcessState; ps != nil {
		s.cpu = ps.UserTime() + ps.SystemTime()
		s.sys = ps.SystemTime()
		s.rssKB = maxRSS(ps)
	}
	if err != nil && during == nil {
		s.err = fmt.Sprintf("%v: %s", err, errb.String())
	}
	return s
}

func (b *bench) check(path string) (bool, string) {
	f, err := os.Open(path)
	if err != nil {
		return false, err.Error()
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	if hex.EncodeToString(h.Sum(nil)) != b.sum {
		return false, "wrong content"
	}
	return true, ""
}

// limitedBuffer keeps the first 4 KiB of a tool's output for errors.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }
