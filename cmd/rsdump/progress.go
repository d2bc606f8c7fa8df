package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress renders byte counts on stderr: a bar when stderr is a terminal,
// a plain line every few seconds otherwise, nothing with --quiet.
type progress struct {
	mu     sync.Mutex
	bar    *progressbar.ProgressBar
	w      io.Writer
	plain  bool
	start  time.Time
	last   time.Time
	bytes  int64
	desc   string // what is being done: "verifying"
	detail string
}

func newProgress(stderr io.Writer, quiet bool, desc string) *progress {
	p := &progress{w: stderr, start: time.Now(), last: time.Now(), desc: desc}
	if quiet {
		return p
	}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		return p
	}
	p.plain = true
	return p
}

// add counts n bytes done; detail names the current unit (a package).
func (p *progress) add(n int64, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bytes += n
	if detail != "" && detail != p.detail {
		p.detail = detail
		if p.bar != nil {
			p.bar.Describe(detail)
		}
	}
	if p.bar != nil {
		p.bar.Add64(n)
		return
	}
	if p.plain && time.Since(p.last) >= 5*time.Second {
		p.last = time.Now()
		fmt.Fprintf(p.w, "rsdump: %s, %s, %s\n", p.label(), fmtBytes(p.bytes), fmtRate(p.bytes, time.Since(p.start)))
	}
}

// label is the current unit, or what is being done when the caller names
// no unit (verify reads many packages at once).
func (p *progress) label() string {
	if p.detail != "" {
		return p.detail
	}
	return p.desc
}

// setTotal gives the bar a total once it is known, for percent and ETA.
func (p *progress) setTotal(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.ChangeMax64(n)
	}
}

// message prints a line without garbling the bar.
func (p *progress) message(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *progress) done() {
	if p.bar != nil {
		p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}

func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func fmtRate(n int64, d time.Duration) string {
	if d <= 0 {
		return "- MB/s"
	}
	return fmt.Sprintf("%.1f MB/s", float64(n)/1e6/d.Seconds())
}
