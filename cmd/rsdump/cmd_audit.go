package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/rsdump/rsdump/audit"
	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/transfer"
	"github.com/rsdump/rsdump/unpack"
)

const auditHelp = `Usage: rsdump audit DIR [--fraction K/N | --subset K/N | --since-days D] [flags]

Checks the copy in DIR, one rsdump sync or unpack keeps, against what
rsdump wrote there (DIR/.rsdump/written.log: each file's length and the
hashes of the manifest it was written from), and records every check. It
reads no network unless --repair is given. Each file checked is read once,
through every hash its record carries (--hash: only those named, when it
carries them); files are read in parallel.

A file is missing, changed (its length, then any hash differs) or holds.
Files in DIR that rsdump did not write are listed apart, as extras, and
left as they are.

By default every file is checked. A schedule checks part of the copy each
run instead:
  --fraction K/N   the least recently audited K/N of the bytes (files
                   never audited first): N runs of 1/N, daily say, cover
                   the whole copy, and no file waits more than N runs for
                   its next check, however many files syncs add;
  --subset K/N     a fixed slice of the files, by a hash of the path
                   (N up to 10000): K = 1..N together are every file;
  --since-days D   the files not audited in the last D days.
Whatever the selection, a file missing or found damaged by an earlier run
is checked in every run until it holds again.

With --repair, the files that do not hold are restored from the Source
DIR's state records (as rsdump sync does it: only those bitstreams, from
inside their packages by byte ranges, or from their URIs), checked again,
and recorded as replacement events. A copy only ever unpacked records no
Source: --repair refuses it.

Every run appends to DIR/.rsdump/audit/log.jsonl a JSON line per file
checked (and per replacement) and one summary line, and records when each
file was last audited in DIR/.rsdump/audit/last-audited.jsonl. --premis
FILE writes the run's events as a PREMIS 3 document (eventType "fixity
check" and "replacement", the outcome with the hashes compared, linked to
each file by its URI and to rsdump as agent); --csv FILE as CSV rows.

Exit status: 0 every file checked holds (or was repaired), 1 a file does
not hold (each named on stderr with the hash expected and found), 2 could
not run (usage, DIR not a copy rsdump keeps, the tree busy, a repair that
could not reach the Source), 130 interrupted. On a terminal a progress
bar shows the bytes read and the time left; otherwise nothing but the
problems (stderr) and the summary line (stdout) is printed.

Examples:
  rsdump audit ./copy
  rsdump audit ./copy --fraction 1/30 --premis /var/log/rsdump/premis-$(date +%F).xml
  rsdump audit ./copy --since-days 90 --repair --json
`

type auditFlags struct {
	json, quiet, repair      bool
	fraction, subset         string
	sinceDays                float64
	premis, csv, baseURL     string
	hashes                   string
	algs                     []string
	jobs                     int
	stall                    time.Duration
	selectionFlags, selected int
}

func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f auditFlags
	fs := newFlags("audit")
	fs.StringVar(&f.fraction, "fraction", "", "check the least recently audited `K/N` of the bytes (1/30: a month of daily runs covers the copy)")
	fs.StringVar(&f.subset, "subset", "", "check slice `K/N` of the files, by a hash of the path (N up to 10000)")
	fs.Float64Var(&f.sinceDays, "since-days", 0, "check the files not audited in the last `D` days")
	fs.BoolVar(&f.repair, "repair", false, "restore the files that do not hold from the Source DIR's state records (reads the network)")
	pathVarP(fs, &f.premis, "premis", "", "", "write the run's events as PREMIS 3 XML to `FILE`")
	pathVarP(fs, &f.csv, "csv", "", "", "write the run's events as CSV to `FILE`")
	fs.StringVar(&f.hashes, "hash", "", "check only these `ALGS` (comma-separated: blake3, the fastest, say) of the hashes a file's record carries (default: every one)")
	fs.StringVar(&f.baseURL, "base-url", "", "`URL` prefix the copy maps, for the events' URIs (default: the one sync recorded, else file: URLs)")
	fs.IntVarP(&f.jobs, "jobs", "j", 0, "files read at once (default: number of CPUs)")
	fs.DurationVar(&f.stall, "stall-timeout", 20*time.Second, "with --repair: give up a request after `DURATION` without a byte")
	fs.BoolVar(&f.json, "json", false, "print a structured report (problems and summary) on stdout")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress and no warnings: only errors (stderr) and the summary")
	if err := parse(fs, args, auditHelp, stdout); err != nil {
		return err
	}
	sel, err := f.check(absArgs(fs.Args()), fs.Changed("since-days"))
	if err != nil {
		return err
	}
	return doAudit(ctx, absLocal(fs.Arg(0)), sel, f, stdout, stderr)
}

func (f *auditFlags) check(args []string, since bool) (audit.Selection, error) {
	var sel audit.Selection
	n := 0
	for _, set := range []bool{f.fraction != "", f.subset != "", since} {
		if set {
			n++
		}
	}
	switch {
	case len(args) != 1:
		return sel, usagef("audit takes one DIR, got %d", len(args))
	case n > 1:
		return sel, usagef("give one of --fraction, --subset and --since-days")
	case f.jobs < 0:
		return sel, usagef("--jobs must not be negative")
	case f.stall <= 0:
		return sel, usagef("--stall-timeout must be positive")
	case since && f.sinceDays <= 0:
		return sel, usagef("--since-days must be positive")
	}
	var err error
	switch {
	case f.fraction != "":
		sel, err = audit.ParseFraction(f.fraction)
	case f.subset != "":
		sel, err = audit.ParseSubset(f.subset)
	case since:
		sel = audit.Selection{Mode: audit.Since, Days: f.sinceDays}
	}
	if err != nil {
		return sel, usagef("%v", err)
	}
	if f.hashes != "" {
		if f.algs, err = audit.ParseHashes(f.hashes); err != nil {
			return sel, usagef("--hash: %v", err)
		}
	}
	return sel, checkURL("--base-url", f.baseURL)
}

func doAudit(ctx context.Context, dir string, sel audit.Selection, f auditFlags, stdout, stderr io.Writer) error {
	rep, err := newReportWriter(reportFlags{json: f.json, quiet: f.quiet}, stdout, stderr)
	if err != nil {
		return exitError{exitUsage, err}
	}
	// A bar on a terminal; nothing otherwise (a run from cron mails what
	// it prints): the summary line, and the log, say what was done.
	p := newProgress(stderr, f.quiet || f.json || !onTerminal(stderr), "auditing")
	rep.msg = p.message
	events := p.events(rep.event)
	o := audit.Options{Select: sel, Hashes: f.algs, Jobs: f.jobs, BaseURL: f.baseURL, Events: events}
	if f.repair {
		// Refused before anything is checked: a copy only ever unpacked
		// records no Source to repair from.
		if st, err := deststate.Read(dir); err == nil && st.Sync == nil {
			p.done()
			return rep.fail(fmt.Errorf("--repair: %s %w", dir, replica.ErrNoSource))
		}
		to := transfer.Options{StallTimeout: f.stall, MinSpeed: -1}
		ro := replica.Options{Transfer: to, Client: transfer.NewClient(to), Events: repairEvents(events)}
		o.Repair = func(ctx context.Context, d *deststate.Dir, recs []deststate.Record) (*unpack.RepairResult, error) {
			return replica.RepairFiles(ctx, d, recs, ro)
		}
	}
	files, err := openRecords(f)
	if err != nil {
		p.done()
		return rep.fail(err)
	}
	defer abortRecords(files) // after End, nothing
	for _, rf := range files {
		o.Recorders = append(o.Recorders, rf)
	}
	sum, err := audit.Run(ctx, dir, o)
	p.done()
	if err != nil {
		return rep.fail(err)
	}
	return finishReport(rep, sum, finding.Counts{Errors: sum.Problems()}, auditSummaryLine(sum))
}

// repairEvents passes on the events of a repair but the findings of the
// bitstreams it writes: the audit reports each file repaired, or not.
func repairEvents(events func(finding.Event)) func(finding.Event) {
	return func(e finding.Event) {
		if f, ok := e.(finding.Finding); ok && !f.Severity.Problem() {
			return
		}
		events(e)
	}
}

// openRecords creates the files --premis and --csv write.
func openRecords(f auditFlags) ([]*audit.File, error) {
	var out []*audit.File
	for _, o := range []struct {
		path string
		csv  bool
	}{{f.premis, false}, {f.csv, true}} {
		if o.path == "" {
			continue
		}
		var rf *audit.File
		var err error
		if o.csv {
			rf, err = audit.CreateFile(o.path, audit.NewCSV)
		} else {
			rf, err = audit.CreateFile(o.path, audit.NewPREMIS)
		}
		if err != nil {
			abortRecords(out)
			return nil, err
		}
		out = append(out, rf)
	}
	return out, nil
}

func abortRecords(files []*audit.File) {
	for _, f := range files {
		f.Abort()
	}
}

func auditSummaryLine(s *audit.Summary) string {
	line := fmt.Sprintf("audited %s of %s (%s of %s, %s): %d hold, %d failed (%d missing)",
		strconv.Itoa(s.Checked), finding.Plural(s.Files, "file"), fmtBytes(s.CheckedBytes), fmtBytes(s.Bytes), s.Selection, s.OK+s.Unverified, s.Failed, s.Missing)
	if s.Unverified > 0 {
		line += fmt.Sprintf(", %d by length alone (no hash rsdump computes)", s.Unverified)
	}
	if s.Repaired+s.Unrepaired > 0 {
		line += fmt.Sprintf("; repaired %d (%s fetched), %d not", s.Repaired, finding.Plural(s.Fetched, "byte"), s.Unrepaired)
	}
	if s.Extras > 0 {
		line += fmt.Sprintf("; %s rsdump did not write (kept)", finding.Plural(s.Extras, "extra file"))
	}
	switch {
	case s.NeverAudited > 0:
		line += fmt.Sprintf("; %s never audited yet", finding.Plural(s.NeverAudited, "file"))
	case !s.Oldest.IsZero():
		line += "; oldest last audit " + s.Oldest.Format(time.RFC3339)
	}
	return line
}
