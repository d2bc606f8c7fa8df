// Command rsdump packs, publishes, fetches and verifies ResourceSync
// Resource Dumps. This file only dispatches subcommands and maps errors to
// exit codes; each command lives in its own file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/rsdump/rsdump/internal/iocount"
	"github.com/rsdump/rsdump/s3"
)

// Exit codes, the same for every command.
const (
	exitOK       = 0
	exitFailed   = 1 // the job failed, or (verify) problems were found
	exitUsage    = 2 // bad flags or arguments, or (verify) could not run
	exitCanceled = 130
)

const usage = `rsdump moves large collections between institutions exactly, as
ResourceSync Resource Dumps: ZIP packages whose manifest lists every
bitstream's URI, length and hashes.

Usage:
  rsdump pack SRC --base-url URL -o OUTDIR [flags]   write a Resource Dump of SRC
  rsdump get SOURCE... [-o DIR] [flags]              fetch packages from all mirrors, verified, resumable
  rsdump metalink FILE...|resourcedump.xml [flags]   write a Metalink 4 document; --check reads one
  rsdump verify TARGET... [flags]                    check packages and dump documents; write nothing
  rsdump verify --tree DIR --against DOC [flags]     audit a tree against a dump or Resource List
  rsdump unpack SOURCE --dest DIR [flags]            restore a dump into DIR, every bitstream verified
  rsdump sync SOURCE --dest DIR [flags]              keep DIR an exact copy of a ResourceSync Source
  rsdump audit DIR [flags]                           check DIR against what rsdump wrote; record each check
  rsdump serve DIR [--addr HOST:PORT] [flags]        publish a pack output over HTTP (Range, RFC 6249 mirrors)
  rsdump sign DIR --key KEYFILE [flags]              sign the documents another tool wrote (NAME.asc)
  rsdump version                                     print the version, VCS revision and Go version

Run 'rsdump help COMMAND' or 'rsdump COMMAND --help' for a command's flags.

Exit status: 0 success, 1 failure, 2 usage error, 130 interrupted.
`

type command struct {
	name string
	run  func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"pack", runPack},
	{"get", runGet},
	{"metalink", runMetalink},
	{"verify", runVerify},
	{"unpack", runUnpack},
	{"sync", runSync},
	{"audit", runAudit},
	{"serve", runServe},
	{"sign", runSign},
	{"version", runVersion},
}

// softMemoryLimit is above the live heap of two packages of 50,000 small
// files in flight (about 110 MB for unpack, which no longer grows with the
// number of files), so the collector does not run back to back, and leaves
// peak RSS under 256 MB: about 215 MB measured for unpack and verify.
const softMemoryLimit = 200 << 20

// usageError marks errors that exit with status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// hinted is an error with advice, printed after it as "rsdump: hint:"
// lines.
type hinted struct {
	err   error
	hints []string
}

func (e hinted) Error() string { return e.err.Error() }
func (e hinted) Unwrap() error { return e.err }

// exitError carries an explicit exit status chosen by a command (verify's 1
// for problems found, say) with an optional message.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func main() {
	// A soft memory limit makes the collector work harder before rsdump's
	// bounded buffers turn into a large heap; GOMEMLIMIT still overrides it.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(softMemoryLimit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(stderr, usage)
		return exitUsage
	case args[0] == "-h" || args[0] == "--help" || (args[0] == "help" && len(args) == 1):
		fmt.Fprint(stdout, usage)
		return exitOK
	case args[0] == "--version" || args[0] == "-V":
		args = []string{"version"}
	case args[0] == "help" && len(args) == 2:
		args = []string{args[1], "--help"} // rsdump help CMD is rsdump CMD --help
	case args[0] == "help":
		fmt.Fprintf(stderr, "rsdump: help takes one COMMAND, got %d\n", len(args)-1)
		return exitUsage
	}
	for _, c := range commands {
		if c.name == args[0] {
			out := &iocount.Writer{W: stdout} // counts what the command printed
			err := c.run(ctx, args[1:], out, stderr)
			code := exitCode(err, stderr)
			if code != exitOK && out.N == 0 && wantsJSON(args[1:]) {
				writeJSONError(stdout, err, code)
			}
			return code
		}
	}
	fmt.Fprintf(stderr, "rsdump: unknown command %q\n%s", args[0], usage)
	return exitUsage
}

// wantsJSON says whether args ask for --json, so that a run that fails
// before its command printed its document still prints one JSON document.
func wantsJSON(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--json" || a == "--json=true":
			return true
		}
	}
	return false
}

// writeJSONError is the one JSON document of a run that failed before its
// command printed one; the error also went to stderr.
func writeJSONError(stdout io.Writer, err error, code int) {
	msg := "failed"
	if err != nil {
		msg = err.Error()
	}
	json.NewEncoder(stdout).Encode(struct {
		Error      string `json:"error"`
		ExitStatus int    `json:"exit_status"`
	}{msg, code})
}

// exitCode prints err, if any, and maps it to the exit status.
func exitCode(err error, stderr io.Writer) int {
	var ue usageError
	var ee exitError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, pflag.ErrHelp):
		return exitOK
	case errors.As(err, &ee):
		if ee.err != nil {
			printErr(stderr, "rsdump: ", ee.err)
		}
		return ee.code
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "rsdump: interrupted")
		return exitCanceled
	case errors.As(err, &ue):
		printErr(stderr, "rsdump: ", err)
		return exitUsage
	}
	printErr(stderr, "rsdump: error: ", err)
	var h hinted
	if errors.As(err, &h) {
		for _, l := range h.hints {
			fmt.Fprintf(stderr, "rsdump: hint: %s\n", escapeControl(l))
		}
	}
	return exitFailed
}

// printErr writes err after prefix, its control characters escaped so
// that it takes one line, or, for errors joined by errors.Join (one failed
// package each, say), one line for each of them.
func printErr(w io.Writer, prefix string, err error) {
	for _, line := range errorLines(err) {
		fmt.Fprintf(w, "%s%s\n", prefix, escapeControl(line))
	}
}

// errorLines splits errors joined by errors.Join, whose message is theirs
// joined by newlines; a newline inside one of them (in an entry's name,
// say) stays part of its line, to be escaped.
func errorLines(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := j.Unwrap()
		msgs := make([]string, len(errs))
		for i, e := range errs {
			if e == nil {
				return []string{err.Error()}
			}
			msgs[i] = e.Error()
		}
		if strings.Join(msgs, "\n") == err.Error() {
			var out []string
			for _, e := range errs {
				out = append(out, errorLines(e)...)
			}
			return out
		}
	}
	return []string{err.Error()}
}

// checkURL refuses, as a usage error, a value that is not an absolute
// http(s) URL where one is required; an empty value passes (an optional
// flag not given).
func checkURL(what, v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil {
		return usagef("%s: %v", what, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("%s %q is not an absolute http(s) URL", what, v)
	}
	return nil
}

// checkSource is checkURL for what rsdump reads, which may also be an
// object in S3.
func checkSource(what, v string) error {
	if !s3.IsURL(v) {
		return checkURL(what, v)
	}
	if _, _, err := s3.Split(v); err != nil {
		return usagef("%s: %v", what, err)
	}
	return nil
}

// newFlags returns a FlagSet whose errors the caller reports.
func newFlags(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	return fs
}

// parse parses flags, printing help on --help, and turns flag errors into
// usage errors.
func parse(fs *pflag.FlagSet, args []string, help string, stdout io.Writer) error {
	err := fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		text, examples, _ := strings.Cut(help, "\nExamples:\n")
		fmt.Fprint(stdout, text, "\nFlags:\n", fs.FlagUsages())
		if examples != "" {
			fmt.Fprint(stdout, "\nExamples:\n", examples)
		}
		return err
	}
	if err != nil {
		return usageError{err}
	}
	return nil
}
