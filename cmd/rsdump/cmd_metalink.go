package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/rsdump/rsdump/internal/atomic"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/pack"
)

const metalinkHelp = `Usage: rsdump metalink FILE... --mirror URL... [-o OUT.meta4] [flags]
       rsdump metalink resourcedump.xml [-o OUT.meta4] [flags]
       rsdump metalink --check DOC.meta4|URL...

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
`

type metalinkFlags struct {
	out                 string
	mirrors             []string
	pieceLength         int64
	check, files, quiet bool
}

func runMetalink(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f metalinkFlags
	fs := newFlags("metalink")
	fs.StringVarP(&f.out, "output", "o", "", "write the document to `FILE` (default: standard output)")
	fs.StringArrayVar(&f.mirrors, "mirror", nil, "mirror `URL` holding the files, optionally followed by ,priority=N and ,location=CC (repeatable)")
	fs.Int64Var(&f.pieceLength, "piece-length", 0, "piece `BYTES` (default: from each file's size, 256 KiB to 16 MiB)")
	fs.BoolVar(&f.files, "files", false, "treat every argument as a plain file, even a Resource Dump document")
	fs.BoolVar(&f.check, "check", false, "validate and describe Metalink documents instead of writing one")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress and no summary")
	if err := parse(fs, args, metalinkHelp, stdout); err != nil {
		return err
	}
	if f.check {
		if err := f.checkUsage(fs.Args()); err != nil {
			return err
		}
		return checkDocs(ctx, fs.Args(), stdout)
	}
	mirrors, err := f.writeUsage(fs.Args())
	if err != nil {
		return err
	}
	w := &metalinkWriter{ctx: ctx, pieceLength: f.pieceLength, mirrors: mirrors,
		prog: newProgress(stderr, f.quiet, "hashing"), quiet: f.quiet, stderr: stderr}
	if !f.files && len(fs.Args()) == 1 {
		if h, ok := sniffDump(fs.Arg(0)); ok {
			return w.write(f.out, stdout, dumpHead(h), func(e *metalink.Encoder) error { return w.dump(e, fs.Arg(0)) })
		}
	}
	if err := checkInputs(fs.Args(), mirrors); err != nil {
		return err
	}
	head := &metalink.Metalink{Generator: "rsdump"}
	return w.write(f.out, stdout, head, func(e *metalink.Encoder) error { return w.files(e, fs.Args()) })
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

func (f *metalinkFlags) writeUsage(args []string) ([]pack.Mirror, error) {
	if len(args) == 0 {
		return nil, usagef("metalink needs FILE... --mirror URL, a resourcedump.xml, or --check DOC...")
	}
	if f.pieceLength != 0 && f.pieceLength < minPieceLength {
		return nil, usagef("--piece-length must be at least %d bytes", minPieceLength)
	}
	var ms []pack.Mirror
	for _, s := range f.mirrors {
		m, err := pack.ParseMirror(s)
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
func checkInputs(paths []string, mirrors []pack.Mirror) error {
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

// metalinkWriter builds a document from files or from a Resource Dump.
type metalinkWriter struct {
	ctx         context.Context
	pieceLength int64
	mirrors     []pack.Mirror
	prog        *progress
	quiet       bool
	stderr      io.Writer
}

// write encodes the document through fill into out, or stdout when out
// is "" or "-". A file is written under a temporary name in the same
// directory, synced and renamed only when complete (internal/atomic).
func (w *metalinkWriter) write(out string, stdout io.Writer, head *metalink.Metalink, fill func(*metalink.Encoder) error) error {
	if out == "" || out == "-" {
		return w.encode(stdout, "standard output", head, fill)
	}
	f, err := atomic.Create(out, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort() // does nothing after Commit
	if err := w.encode(f, out, head, fill); err != nil {
		return err
	}
	return f.Commit()
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
	if !w.quiet {
		fmt.Fprintf(w.stderr, "rsdump: wrote %s to %s\n", countOf(e.Count(), "file"), name)
	}
	return nil
}

// files encodes a <file> per path, each read once.
func (w *metalinkWriter) files(e *metalink.Encoder, paths []string) error {
	for _, p := range paths {
		f, err := w.hashFile(p, filepath.Base(p), nil)
		if err != nil {
			return err
		}
		f.URLs = w.mirrorURLs(nil, f.Name)
		if err := e.Encode(f); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// hashFile reads path once into a File named name: size, sha-256 and
// piece hashes, and every byte also goes to extra (when not nil).
func (w *metalinkWriter) hashFile(path, name string, extra io.Writer) (*metalink.File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	pl := w.pieceLength
	if pl == 0 {
		pl = metalink.DefaultPieceLength(st.Size())
	}
	var r io.Reader = &hashReader{ctx: w.ctx, r: fh, prog: w.prog, name: name}
	if extra != nil {
		r = io.TeeReader(r, extra)
	}
	f, err := metalink.FileFromReader(name, r, pl)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// mirrorURLs appends a URL per --mirror (the mirror URL plus name) to
// urls, leaving out repeats.
func (w *metalinkWriter) mirrorURLs(urls []metalink.URL, name string) []metalink.URL {
	for _, m := range w.mirrors {
		base := strings.TrimSuffix(m.BaseURL, "/") + "/"
		u := metalink.URL{URL: base + url.PathEscape(name), Priority: m.Priority, Location: m.Location}
		urls = appendURL(urls, u)
	}
	return urls
}

func appendURL(urls []metalink.URL, u metalink.URL) []metalink.URL {
	for _, v := range urls {
		if v.URL == u.URL {
			return urls
		}
	}
	return append(urls, u)
}

// hashReader stops reading when ctx is canceled and counts progress.
type hashReader struct {
	ctx  context.Context
	r    io.Reader
	prog *progress
	name string
}

func (c *hashReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	c.prog.add(int64(n), c.name)
	return n, err
}

// countOf writes "1 file", "2 files".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
