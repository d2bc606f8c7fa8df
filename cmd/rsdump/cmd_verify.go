package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/transfer"
	"github.com/rsdump/rsdump/transfer/pkgfetch"
	"github.com/rsdump/rsdump/verify"
)

const verifyHelp = `Usage: rsdump verify TARGET... [flags]
       rsdump verify --tree DIR --against DOCUMENT [--base-url URL | --layout path] [flags]

Checks Resource Dumps and Change Dumps and writes nothing. A TARGET is a
package (.zip), a dump document or index (resourcedump.xml, changedump.xml;
a file or an http(s) URL), or a directory holding them. Every problem is
reported, not only the first:
  the ZIP: central directory, entry names (.., absolute, backslash, drive
    letters), duplicates, CRC-32, declared sizes, expansion (zip bombs);
  the manifest: present, well-formed, capability, time attributes, paths,
    order of changes, orphan entries and missing bitstreams;
  every bitstream: length and every listed hash (an algorithm rsdump
    cannot compute is unverifiable, a bitstream without hash length-only);
  the dump document: each package's length and hash, the detached
    manifest, packages listed but missing, the document's own rules.

A package is read once, front to back; packages are verified in parallel.
For a local dump document, each package is looked for beside it under the
last segment of its URL.

With --tree, the files under DIR are audited against a Resource Dump,
Resource Dump Manifest or Resource List: missing, extra and mismatched
files (ResourceSync §5.2).

Exit status: 0 everything verified, 1 problems found (errors, a malformed
or oversized document, or bitstreams that could not be verified), 2 could
not run (usage, unreadable input), 130 interrupted.

Examples:
  rsdump verify ./dump
  rsdump verify https://example.org/dump/resourcedump.xml --json > report.json
  rsdump verify --tree ./tree --against ./dump/resourcedump.xml --base-url https://example.org/data/
`

type verifyFlags struct {
	http1 bool // --http1.1: HTTP/1.1 only
	reportFlags
	tree, against, baseURL, layout string
	maxRatio                       float64
	jobs                           int
}

// reportFlags are the output flags verify and unpack share.
type reportFlags struct {
	json, quiet bool
	reportDir   string
	stall       time.Duration
}

func (f *reportFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&f.stall, "stall-timeout", 20*time.Second, "fail a document or package request after `DURATION` without an answer or a byte (remote packages: retried on another mirror first)")
	fs.BoolVar(&f.json, "json", false, "print a structured report (problems and summary) on stdout")
	pathVarP(fs, &f.reportDir, "report-dir", "", "", "write ok.csv and notok.csv into `DIR`")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress and no warnings: only errors (stderr) and the summary")
}

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f verifyFlags
	fs := newFlags("verify")
	f.register(fs)
	pathVarP(fs, &f.tree, "tree", "", "", "audit the files under `DIR` (needs --against)")
	pathVarP(fs, &f.against, "against", "", "", "`DOCUMENT` to audit the tree against: Resource Dump, its manifest, or Resource List")
	fs.StringVar(&f.baseURL, "base-url", "", "with --tree: `URL` prefix the Source used; a file's path is its URI relative to it")
	fs.StringVar(&f.layout, "layout", "url", "with --tree: where files are, by `url` (relative to --base-url) or manifest path")
	fs.Float64Var(&f.maxRatio, "max-ratio", pkgread.DefaultMaxRatio, "refuse entries that inflate more than `N` times their compressed size")
	fs.IntVarP(&f.jobs, "jobs", "j", 0, "packages verified at once (default: number of CPUs)")
	parseReading := readerFlags(fs, &f.http1)
	ctx, err := parseReading(ctx, args, verifyHelp, stdout, &f.against)
	if err != nil {
		return err
	}
	if err := f.check(fs.Args()); err != nil {
		return err
	}
	targets, err := parseLocations("TARGET", fs.Args())
	if err != nil {
		return err
	}
	return doVerify(ctx, f, locStrings(targets), stdout, stderr)
}

func (f *verifyFlags) check(args []string) error {
	switch {
	case f.tree != "" && (f.against == "" || len(args) > 0):
		return usagef("--tree DIR needs --against DOCUMENT and no TARGET")
	case f.tree == "" && f.against != "":
		return usagef("--against needs --tree DIR")
	case f.tree == "" && len(args) == 0:
		return usagef("verify needs at least one TARGET")
	case f.maxRatio < 1:
		return usagef("--max-ratio must be at least 1")
	case f.jobs < 0:
		return usagef("--jobs must not be negative")
	case f.stall <= 0:
		return usagef("--stall-timeout must be positive")
	}
	if f.tree != "" && f.baseURL != "" {
		return checkURL("--base-url", f.baseURL)
	}
	return nil
}

func doVerify(ctx context.Context, f verifyFlags, targets []string, stdout, stderr io.Writer) error {
	rep, p, err := startReport(f.reportFlags, stdout, stderr, "verifying")
	if err != nil {
		return err
	}
	// verify holds no download code: remote packages are fetched, from
	// every mirror, by the engine behind rsdump get.
	to := transfer.Options{StallTimeout: f.stall, HTTP1: f.http1}
	client := transfer.NewClient(to)
	opts := verify.Options{Limits: pkgread.Limits{MaxRatio: f.maxRatio}, Jobs: f.jobs, Client: client,
		Packages: &pkgfetch.Remote{Transfer: to, Client: client}, Events: p.events(rep.event)}
	var sum *verify.Summary
	if f.tree != "" {
		sum, err = auditTree(ctx, f, opts)
	} else {
		sum, err = verify.Verify(ctx, targets, opts)
	}
	p.done()
	if err != nil {
		return rep.fail(err)
	}
	return finishReport(rep, sum, sum.Counts, verifySummaryLine(sum))
}

func auditTree(ctx context.Context, f verifyFlags, opts verify.Options) (*verify.Summary, error) {
	layout, err := deststate.ParseLayout(f.layout)
	if err != nil {
		return nil, err
	}
	if layout == deststate.ByURI && f.baseURL == "" {
		return nil, errors.New("--tree with --layout url needs --base-url")
	}
	m, err := deststate.NewMapper(layout, f.baseURL)
	if err != nil {
		return nil, err
	}
	return verify.Audit(ctx, f.tree, f.against, m, opts)
}

func verifySummaryLine(s *verify.Summary) string {
	return fmt.Sprintf("%s, %s, %s (%s): %d verified, %d unverified, %s, %s",
		finding.Plural(s.Documents, "document"), finding.Plural(s.Packages, "package"), finding.Plural(s.Bitstreams, "bitstream"), fmtBytes(s.Bytes),
		s.Verified, s.Unverified, finding.Plural(s.Errors, "error"), finding.Plural(s.Warnings, "warning"))
}

// finishReport writes the summary and chooses the exit status: 1 when any
// finding is a problem.
func finishReport(rep *reportWriter, summary any, c finding.Counts, line string) error {
	if err := rep.close(summary); err != nil {
		return err
	}
	if !rep.flags.json {
		fmt.Fprintln(rep.stdout, line)
	}
	if c.Problems() > 0 {
		return exitError{code: exitFailed}
	}
	return nil
}

// reportWriter renders findings: problem lines on stderr (warnings not
// with --quiet), or with --json a document on stdout holding them all;
// and the ok/notOK logs with --report-dir. It is called from several
// goroutines.
type reportWriter struct {
	flags    reportFlags
	stdout   io.Writer
	msg      func(format string, args ...any) // a line on stderr, past the progress bar
	mu       sync.Mutex
	ok, bad  *csv.Writer
	files    []*os.File
	jsonSeen bool
	err      error
	runErr   error // why the run failed, ending the JSON document
	runCode  int   // the exit status it gives
}

var csvHeader = []string{"uri", "path", "check", "expected", "actual", "severity", "message", "source"}

// startReport is the report writer of a command and its progress line on
// stderr (silent with --quiet or --json), the report's messages printed
// above the line.
func startReport(f reportFlags, stdout, stderr io.Writer, desc string) (*reportWriter, *progress, error) {
	rep, err := newReportWriter(f, stdout, stderr)
	if err != nil {
		return nil, nil, exitError{exitUsage, err}
	}
	p := newProgress(stderr, f.quiet || f.json, desc)
	rep.msg = p.message
	return rep, p, nil
}

func newReportWriter(f reportFlags, stdout, stderr io.Writer) (*reportWriter, error) {
	r := &reportWriter{flags: f, stdout: stdout, msg: func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }}
	if f.json {
		fmt.Fprint(stdout, "{\"findings\": [")
	}
	if f.reportDir == "" {
		return r, nil
	}
	if err := os.MkdirAll(f.reportDir, 0o755); err != nil {
		return nil, err
	}
	var err error
	if r.ok, err = r.createCSV("ok.csv"); err == nil {
		r.bad, err = r.createCSV("notok.csv")
	}
	if err != nil {
		r.closeFiles()
		return nil, err
	}
	return r, nil
}

func (r *reportWriter) createCSV(name string) (*csv.Writer, error) {
	f, err := os.Create(filepath.Join(r.flags.reportDir, name))
	if err != nil {
		return nil, err
	}
	r.files = append(r.files, f)
	w := csv.NewWriter(f)
	return w, w.Write(csvHeader)
}

// event renders the findings among the events (finding.Finding).
func (r *reportWriter) event(e finding.Event) {
	if f, ok := e.(finding.Finding); ok {
		r.finding(f)
	}
}

// restored reports a finding of a restore (sync, unpack): with verbose,
// and neither --json nor --quiet, an OK one is also a line on stdout.
func (r *reportWriter) restored(f finding.Finding, verbose bool) {
	if verbose && f.Severity == finding.OK && !r.flags.json && !r.flags.quiet {
		fmt.Fprintf(r.stdout, "%s: %s\n", f.Code, escapeControl(orText(f.Path, f.Source)))
	}
	r.finding(f)
}

func (r *reportWriter) finding(f finding.Finding) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ok != nil {
		w := r.bad
		if f.Severity == finding.OK {
			w = r.ok
		}
		r.keep(w.Write([]string{f.URI, f.Path, f.Code, f.Expected, f.Actual, f.Severity.String(), f.Msg, f.Source}))
	}
	switch {
	case f.Severity == finding.OK:
	case r.flags.json:
		r.writeJSON(f)
	case f.Severity.Problem() || !r.flags.quiet:
		r.msg("%s", escapeControl(f.String()))
	}
}

type jsonFinding struct {
	Severity string `json:"severity"`
	Check    string `json:"check"`
	Source   string `json:"source,omitempty"`
	URI      string `json:"uri,omitempty"`
	Path     string `json:"path,omitempty"`
	Expected string `json:"expected,omitempty"`
	Actual   string `json:"actual,omitempty"`
	Message  string `json:"message,omitempty"`
}

// writeJSON streams one finding into the findings array, so that a run
// with a million problems does not hold them in memory.
func (r *reportWriter) writeJSON(f finding.Finding) {
	b, err := json.Marshal(jsonFinding{f.Severity.String(), f.Code, f.Source, f.URI, f.Path, f.Expected, f.Actual, f.Msg})
	r.keep(err)
	if r.jsonSeen {
		fmt.Fprint(r.stdout, ",")
	}
	r.jsonSeen = true
	fmt.Fprintf(r.stdout, "\n  %s", b)
}

func (r *reportWriter) keep(err error) {
	if r.err == nil {
		r.err = err
	}
}

// fail ends the report of a run that could not go on, and returns the
// error for the exit status it gives: 130 interrupted, 1 for a document
// refused, else 2.
func (r *reportWriter) fail(err error) error {
	r.runErr, r.runCode = err, exitUsage
	var re *resourcesync.RefError
	switch {
	case errors.Is(err, context.Canceled):
		r.runCode = exitCanceled
	case errors.As(err, &re), errors.Is(err, pkgread.ErrRejected):
		r.runCode = exitFailed // a document that is bad input, as a malformed one is
	}
	r.close(nil)
	if r.runCode == exitCanceled {
		return err
	}
	return exitError{r.runCode, err}
}

// close ends the JSON document with the summary (when summary is not nil)
// and flushes the CSV files.
func (r *reportWriter) close(summary any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.flags.json && summary != nil {
		b, err := json.MarshalIndent(summary, "  ", "  ")
		r.keep(err)
		fmt.Fprintf(r.stdout, "\n],\n  \"summary\": %s\n}\n", b)
	} else if r.flags.json {
		msg := "failed"
		if r.runErr != nil {
			msg = r.runErr.Error()
		}
		b, _ := json.Marshal(msg)
		fmt.Fprintf(r.stdout, "\n],\n  \"error\": %s,\n  \"exit_status\": %d\n}\n", b, r.runCode) // and on stderr
	}
	for _, w := range []*csv.Writer{r.ok, r.bad} {
		if w != nil {
			w.Flush()
			r.keep(w.Error())
		}
	}
	r.keep(r.closeFiles())
	if r.err != nil {
		return fmt.Errorf("writing the report: %w", r.err)
	}
	return nil
}

func (r *reportWriter) closeFiles() error {
	var first error
	for _, f := range r.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	r.files = nil
	return first
}
