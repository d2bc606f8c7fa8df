package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/s3"
)

const metalinkHelp = `Usage: rsdump metalink FILE... --mirror URL... [-o OUT.meta4] [flags]
       rsdump metalink resourcedump.xml [-o OUT.meta4] [flags]
       rsdump metalink --check DOC.meta4|URL... [--json]

Writes a Metalink 4 document (RFC 5854) to OUT.meta4, or to standard output.

With FILEs: one <file> per FILE, named by its base name, with its size,
sha-256 and sha-256 piece hashes (each FILE is read once), and a <url> per
--mirror: the mirror URL followed by the file name.

With a Resource Dump or Change Dump document (a single argument whose
capability is resourcedump or changedump; a Resource Dump Index works when
its parts are beside it): one <file> per package, with the package's <loc>
(priority 1) and every rel="duplicate" link (pri becomes priority) as
URLs, and the length and hashes the dump states. A package present beside
the document, named by the last segment of its <loc>, is read to add piece
hashes, and its length and hashes must match the dump's. --mirror adds
mirrors; --files treats the document as a plain FILE.

With --check: reads each document (a path or an http(s) URL), validates it,
and prints each file's name, size, hashes, pieces and URLs, then every
warning and error with its code.

Exit status: 0 success (with --check: every document valid), 1 failure (an
input could not be read, a package differs from the dump; with --check: a
document is invalid or unreadable), 2 usage error, 130 interrupted.

Examples:
  rsdump metalink dump/*.zip --mirror https://a.example.org/dump/ --mirror https://b.example.net/dump/ -o dump.meta4
  rsdump metalink dump/resourcedump.xml -o dump/resourcedump.meta4 --piece-length 4MiB
  rsdump metalink --check https://example.org/dump/resourcedump.meta4
`

type metalinkFlags struct {
	out                 string
	mirrors             []string
	pieceLength         int64
	check, files, quiet bool
	json                bool
}

func runMetalink(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f metalinkFlags
	fs := newFlags("metalink")
	fs.StringVarP(&f.out, "output", "o", "", "write the document to `FILE` (default: standard output)")
	fs.StringArrayVar(&f.mirrors, "mirror", nil, "mirror `URL` holding the files, optionally followed by ,priority=N and ,location=CC (repeatable)")
	fs.Var(newSizeValue(&f.pieceLength, 0), "piece-length", "piece `SIZE` (bytes, or 1M, 4MiB; default: from each file's size, 256 KiB to 16 MiB)")
	fs.BoolVar(&f.files, "files", false, "treat every argument as a plain file, even a Resource Dump document")
	fs.BoolVar(&f.check, "check", false, "validate and describe Metalink documents instead of writing one")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress, no warnings and no summary")
	fs.BoolVar(&f.json, "json", false, "print a machine-readable summary (with --check, the report) on stdout; needs -o when writing")
	if err := parse(fs, args, metalinkHelp, stdout); err != nil {
		return err
	}
	ctx = s3.Grant(ctx, fs.Args()...)
	if f.check {
		if err := f.checkUsage(fs.Args()); err != nil {
			return err
		}
		return checkDocs(ctx, fs.Args(), stdout, f.json)
	}
	if f.json && (f.out == "" || f.out == "-") {
		return usagef("metalink --json needs -o FILE: the document would go to standard output")
	}
	mirrors, err := f.writeUsage(fs.Args())
	if err != nil {
		return err
	}
	w := &metalinkWriter{ctx: ctx, prog: newProgress(stderr, f.quiet || f.json, "hashing"), quiet: f.quiet, stderr: stderr}
	w.b = metalink.Builder{PieceLength: f.pieceLength, Mirrors: mirrorBases(mirrors), Events: w.prog.events(nil)}
	if f.json {
		w.jsonOut = stdout
	}
	if !f.files && len(fs.Args()) == 1 {
		h, err := resourcesync.Peek(ctx, fs.Arg(0))
		if err != nil && resourcesync.IsURL(fs.Arg(0)) {
			return err // a URL can only be a dump document
		}
		if err == nil && resourcesync.IsDump(h) {
			if w.prog.shown() {
				w.prog.grow(localPackagesSize(ctx, fs.Arg(0)))
			}
			return w.done(w.write(f.out, stdout, metalink.DumpHead(h), func(e *metalink.Encoder) error { return w.dump(e, fs.Arg(0)) }))
		}
	}
	if err := checkInputs(fs.Args(), mirrors); err != nil {
		return err
	}
	w.prog.grow(totalSize(fs.Args()))
	head := &metalink.Metalink{Generator: "rsdump"}
	return w.done(w.write(f.out, stdout, head, func(e *metalink.Encoder) error { return w.files(e, fs.Args()) }))
}

func (f *metalinkFlags) checkUsage(args []string) error {
	if len(args) == 0 {
		return usagef("metalink --check needs at least one document")
	}
	if f.out != "" || len(f.mirrors) > 0 || f.pieceLength != 0 || f.files {
		return usagef("--check takes no -o, --mirror, --piece-length or --files")
	}
	return nil
}

// minPieceLength keeps piece lists, and so documents, of sane size: at
// 16 KiB a 1 TiB file already has 64 million pieces.
const minPieceLength = 16 << 10

func (f *metalinkFlags) writeUsage(args []string) ([]layout.Mirror, error) {
	if len(args) == 0 {
		return nil, usagef("metalink needs FILE... --mirror URL, a resourcedump.xml, or --check DOC...")
	}
	if f.pieceLength != 0 && f.pieceLength < minPieceLength {
		return nil, usagef("--piece-length must be at least %d bytes", minPieceLength)
	}
	var ms []layout.Mirror
	for _, s := range f.mirrors {
		m, err := layout.ParseMirror(s)
		if err != nil {
			return nil, usageError{err}
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// checkInputs refuses, before anything is read, what would make the
// document invalid: a missing input, no mirror, or two inputs with the
// same base name.
func checkInputs(paths []string, mirrors []layout.Mirror) error {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return err
		}
	}
	if len(mirrors) == 0 {
		return usagef("metalink FILE... needs at least one --mirror URL: a <file> without a <url> cannot be downloaded")
	}
	seen := map[string]string{}
	for _, p := range paths {
		name := filepath.Base(p)
		if prev, dup := seen[name]; dup {
			return usagef("%s and %s have the same name %q: Metalink file names must be unique", prev, p, name)
		}
		seen[name] = p
	}
	return nil
}

// totalSize sums the sizes of files, for the progress total.
func totalSize(paths []string) int64 {
	var n int64
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// localPackagesSize sums the sizes of the packages a local dump document
// (and its index parts) lists that are beside it: the bytes the Builder
// will read. It is a first, cheap pass over the document, for the
// progress total.
func localPackagesSize(ctx context.Context, doc string) int64 {
	if resourcesync.IsURL(doc) {
		return 0
	}
	var n int64
	l := resourcesync.Loader{Entry: func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
		if d.Header.Kind == resourcesync.SitemapIndex {
			return nil
		}
		if pu, err := url.Parse(u.Loc); err == nil && path.Base(pu.Path) != "/" {
			if fi, err := os.Stat(filepath.Join(filepath.Dir(d.Loc), path.Base(pu.Path))); err == nil && fi.Mode().IsRegular() {
				n += fi.Size()
			}
		}
		return nil
	}}
	l.Load(ctx, doc)
	return n
}

// mirrorBases turns --mirror flags into the Builder's base URLs.
func mirrorBases(ms []layout.Mirror) []metalink.URL {
	var urls []metalink.URL
	for _, m := range ms {
		urls = append(urls, metalink.URL{URL: m.BaseURL, Priority: m.Priority, Location: m.Location})
	}
	return urls
}

// metalinkWriter writes a document from files or from a Resource Dump.
type metalinkWriter struct {
	ctx     context.Context
	b       metalink.Builder
	prog    *progress
	quiet   bool
	stderr  io.Writer
	jsonOut io.Writer    // stdout with --json, for the summary
	summary func() error // prints the --json summary once the document is in place
}

// write encodes the document through fill into out, or stdout when out
// is "" or "-". A file is written under a temporary name in the same
// directory, synced and renamed only when complete (metalink.WriteFile).
func (w *metalinkWriter) write(out string, stdout io.Writer, head *metalink.Metalink, fill func(*metalink.Encoder) error) error {
	if out == "" || out == "-" {
		return w.encode(stdout, "standard output", head, fill)
	}
	return metalink.WriteFile(out, func(dst io.Writer) error { return w.encode(dst, out, head, fill) })
}

// done prints the --json summary once the document is in place.
func (w *metalinkWriter) done(err error) error {
	if err != nil || w.summary == nil {
		return err
	}
	return w.summary()
}

func (w *metalinkWriter) encode(dst io.Writer, name string, head *metalink.Metalink, fill func(*metalink.Encoder) error) error {
	e, err := metalink.NewEncoder(dst, head)
	if err != nil {
		return err
	}
	err = fill(e)
	w.prog.done()
	if err != nil {
		return err
	}
	if err := e.Close(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if w.jsonOut != nil {
		w.summary = func() error {
			return json.NewEncoder(w.jsonOut).Encode(struct {
				Output string `json:"output"`
				Files  int    `json:"files"`
			}{name, e.Count()})
		}
		return nil
	}
	if !w.quiet {
		fmt.Fprintf(w.stderr, "rsdump: wrote %s to %s\n", finding.Plural(e.Count(), "file"), name)
	}
	return nil
}

// files encodes a <file> per path, each read once.
func (w *metalinkWriter) files(e *metalink.Encoder, paths []string) error {
	for _, p := range paths {
		f, err := w.b.HashFile(w.ctx, p, filepath.Base(p), nil)
		if err != nil {
			return err
		}
		f.URLs = w.b.MirrorURLs(nil, f.Name)
		if err := e.Encode(f); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// dump encodes a <file> per package of the dump document at p.
func (w *metalinkWriter) dump(e *metalink.Encoder, p string) error {
	st, err := w.b.Dump(w.ctx, e, p)
	if err == nil && st.Missing > 0 && !w.quiet {
		fmt.Fprintf(w.stderr, "rsdump: %d of %d packages not found beside %s: listed without piece hashes\n", st.Missing, st.Packages, p)
	}
	return err
}
