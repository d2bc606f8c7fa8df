package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/rsdump/rsdump/finding"
)

// progress is the one progress renderer of every long command (pack,
// metalink, verify, unpack, get, sync), on stderr. It consumes the
// library's one progress contract, the finding.Event a command's Options
// take (events): bytes done (finding.Progress, add), bytes of the work
// ahead (finding.Planned, grow; setTotal, for pack's scan), and the
// messages each command makes of the other events, which must not garble
// the display. It draws
//   - on a terminal, a progressbar bar with percent, bytes, rate and ETA
//     (a spinner only while no total is known);
//   - otherwise, a plain line every few seconds: "rsdump: verifying: 45%,
//     460.0 MiB of 1.0 GiB, 95.3 MB/s, ETA 6s";
//   - nothing with --quiet or --json. Messages print as given: each
//     command decides what --quiet silences (warnings, notes).
type progress struct {
	mu     sync.Mutex
	w      io.Writer
	desc   string // what is being done: "verifying"
	detail string // the current unit, when the command names one
	note   string // a polled source's extra words: "2 mirrors, 8 connections"
	bar    *progressbar.ProgressBar
	plain  bool
	now    func() time.Time
	every  time.Duration // between plain lines
	poll   time.Duration // between ticks: polls and redraws
	start  time.Time
	last   time.Time // of the last plain line
	lastN  int64     // bytes done at the last plain line
	n      int64     // bytes done
	total  int64     // bytes of all the work, 0 while unknown
	// noteFn is polled for the note every tick (get's mirrors).
	noteFn  func() string
	ticking bool
	stop    chan struct{}
	stopped chan struct{}
}

func newProgress(stderr io.Writer, quiet bool, desc string) *progress {
	p := &progress{w: stderr, desc: desc, now: time.Now, every: 5 * time.Second, poll: time.Second}
	p.start, p.last = p.now(), p.now()
	if quiet {
		return p
	}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.poll = 200 * time.Millisecond
		p.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionShowTotalBytes(true),
			progressbar.OptionUseIECUnits(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		return p
	}
	p.plain = true
	return p
}

// shown says whether anything is drawn: not with --quiet.
func (p *progress) shown() bool { return p.bar != nil || p.plain }

// events returns a command's Options.Events: it draws the progress
// (finding.Progress, finding.Planned) and passes every other event
// (findings, notes, a library's own) to other, which may be nil.
func (p *progress) events(other func(finding.Event)) func(finding.Event) {
	return func(e finding.Event) {
		switch e := e.(type) {
		case finding.Progress:
			p.add(e.Bytes, e.Unit)
		case finding.Planned:
			p.grow(e.Bytes)
		default:
			if other != nil {
				other(e)
			}
		}
	}
}

// polledNote makes the renderer read its note from fn every tick: the
// state of something that changes without events (get's mirrors).
func (p *progress) polledNote(fn func() string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.noteFn = fn
	p.startTicker()
}

// add counts n bytes done; detail, when not "", names the current unit.
func (p *progress) add(n int64, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += n
	if detail != "" && detail != p.detail {
		p.detail = detail
		if p.bar != nil {
			p.bar.Describe(p.label())
		}
	}
	p.startTicker()
	p.drawBar()
}

// grow adds n bytes to the total, as the library learns of more work.
func (p *progress) grow(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total += n
	p.startTicker()
	p.drawBar()
}

// setTotal gives the total once it is known, for percent and ETA.
func (p *progress) setTotal(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = n
	p.drawBar()
}

// message prints a line without garbling the bar.
func (p *progress) message(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintln(p.w, escapeControl(fmt.Sprintf(format, args...)))
}

// done stops the ticker and clears the bar; a summary follows on stdout.
func (p *progress) done() {
	p.mu.Lock()
	stop, stopped := p.stop, p.stopped
	p.stop = nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-stopped
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}

// startTicker starts, once, the goroutine that polls and prints plain
// lines. It runs only when there is something to show.
func (p *progress) startTicker() {
	if p.ticking || (p.bar == nil && !p.plain) {
		return
	}
	p.ticking = true
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go func(stop, stopped chan struct{}) {
		defer close(stopped)
		t := time.NewTicker(p.poll)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.tick()
			}
		}
	}(p.stop, p.stopped)
}

// tick polls the note, if any, and draws: the bar, or a plain line when
// one is due.
func (p *progress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.noteFn != nil {
		p.note = p.noteFn()
	}
	p.drawBar()
	now := p.now()
	if !p.plain || now.Sub(p.last) < p.every {
		return
	}
	fmt.Fprintf(p.w, "rsdump: %s\n", p.line(now))
	p.last, p.lastN = now, p.n
}

// drawBar brings the bar up to date. The bar's maximum stays above the
// bytes done until done is called, since progressbar stops at 100%, and a
// total learned late (pack's scan) may still grow.
func (p *progress) drawBar() {
	if p.bar == nil {
		return
	}
	if p.note != "" {
		p.bar.Describe(p.label() + " (" + p.note + ")")
	}
	if p.total > 0 {
		if max := max(p.total, p.n+1); p.bar.GetMax64() != max {
			p.bar.ChangeMax64(max)
		}
	}
	p.bar.Set64(p.n)
}

// line is the plain progress line: percent and totals when the total is
// known, the rate since the previous line, and the ETA at that rate.
func (p *progress) line(now time.Time) string {
	var b strings.Builder
	b.WriteString(p.label() + ": ")
	since := now.Sub(p.last)
	rate := float64(p.n-p.lastN) / since.Seconds()
	if p.total > 0 {
		fmt.Fprintf(&b, "%.0f%%, %s of %s", 100*float64(min(p.n, p.total))/float64(p.total), fmtBytes(p.n), fmtBytes(p.total))
	} else {
		b.WriteString(fmtBytes(p.n))
	}
	fmt.Fprintf(&b, ", %s", fmtRate(p.n-p.lastN, since))
	if p.total > p.n && rate > 0 {
		eta := time.Duration(float64(p.total-p.n) / rate * float64(time.Second))
		fmt.Fprintf(&b, ", ETA %s", eta.Round(time.Second))
	}
	if p.note != "" {
		b.WriteString(", " + p.note)
	}
	return b.String()
}

// label is what is being done, and the current unit when there is one.
func (p *progress) label() string {
	if p.detail != "" {
		return p.desc + " " + p.detail
	}
	return p.desc
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
