package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rsdump/rsdump/transfer"
	"golang.org/x/term"
)

// getProgress draws rsdump get's progress on stderr: on a terminal, an
// overall bar and a line per mirror, redrawn in place; otherwise a plain
// line every few seconds; nothing with --quiet. It polls the Getter.
type getProgress struct {
	mu       sync.Mutex
	w        io.Writer
	quiet    bool
	tty      bool
	drawn    int // lines of the last frame, erased before the next
	began    time.Time
	last     map[string]int64 // bytes per host at the previous frame
	lastTime time.Time
	interval time.Duration
}

func newGetProgress(w io.Writer, quiet bool) *getProgress {
	p := &getProgress{w: w, quiet: quiet, began: time.Now(), interval: 5 * time.Second, last: map[string]int64{}}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty, p.interval = true, 200*time.Millisecond
	}
	return p
}

// start polls g until the returned stop is called.
func (p *getProgress) start(g *transfer.Getter) (stop func()) {
	if p.quiet {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				p.draw(g.Progress(), true)
				return
			case <-t.C:
				p.draw(g.Progress(), false)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// event prints file-level news between frames.
func (p *getProgress) event(e transfer.Event) {
	if p.quiet {
		return
	}
	switch e := e.(type) {
	case *transfer.MirrorDropped:
		p.message("rsdump: %s: dropped %s: %s", e.File, e.URL, e.Reason)
	case *transfer.FileStart:
		if e.Resumed > 0 {
			p.message("rsdump: %s: resuming, %s of %s already verified", e.Name, fmtBytes(e.Resumed), fmtBytes(e.Size))
		}
	}
}

func (p *getProgress) message(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *getProgress) erase() {
	if p.tty && p.drawn > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA\x1b[J", p.drawn)
		p.drawn = 0
	}
}

func (p *getProgress) draw(pr transfer.Progress, final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	dt := now.Sub(p.lastTime)
	lines := []string{p.overall(pr, now)}
	for _, m := range pr.Mirrors {
		rate := "-"
		if prev, ok := p.last[m.Host]; ok && dt > 0 {
			rate = fmtRate(m.Received-prev, dt)
		}
		p.last[m.Host] = m.Received
		lines = append(lines, fmt.Sprintf("  %-28s %-8s %2d conn  %10s  %s", m.Host, m.State, m.Active, rate, fmtBytes(m.Received)))
	}
	p.lastTime = now
	if !p.tty {
		if !final {
			fmt.Fprintf(p.w, "rsdump: %s\n", lines[0])
		}
		return
	}
	p.erase()
	if final {
		return
	}
	fmt.Fprintln(p.w, strings.Join(lines, "\n"))
	p.drawn = len(lines)
}

// overall is "[=====>    ] 45% 460.0 MiB / 1.0 GiB  95.3 MB/s  ETA 6s".
func (p *getProgress) overall(pr transfer.Progress, now time.Time) string {
	frac := 0.0
	if pr.Total > 0 {
		frac = float64(pr.Done) / float64(pr.Total)
	}
	el := now.Sub(p.began)
	eta := "-"
	if rate := float64(pr.Received) / el.Seconds(); rate > 0 && pr.Total > pr.Done {
		eta = time.Duration(float64(pr.Total-pr.Done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	const width = 30
	n := int(frac * width)
	bar := strings.Repeat("=", n) + strings.Repeat(" ", width-n)
	return fmt.Sprintf("[%s] %3.0f%% %s / %s  %s  ETA %s", bar, frac*100, fmtBytes(pr.Done), fmtBytes(pr.Total),
		fmtRate(pr.Received, el), eta)
}
