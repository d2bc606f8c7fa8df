package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/transfer"
)

// checkDocs validates and describes each document; it fails with exit
// status 1 when any is invalid or unreadable.
func checkDocs(ctx context.Context, docs []string, stdout io.Writer) error {
	bad := 0
	for _, d := range docs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !checkDoc(ctx, d, stdout) {
			bad++
		}
	}
	if bad > 0 {
		return exitError{exitFailed, fmt.Errorf("%d of %s invalid or unreadable", bad, countOf(len(docs), "document"))}
	}
	return nil
}

// checkDoc prints the report on one document and says whether it is valid.
func checkDoc(ctx context.Context, src string, w io.Writer) bool {
	rc, maxBytes, err := openDoc(ctx, src)
	if err != nil {
		fmt.Fprintf(w, "%s: unreadable: %v\n", src, err)
		return false
	}
	defer rc.Close()
	m, ps, err := metalink.DecodeLimits(rc, metalink.Limits{MaxBytes: maxBytes})
	var fatal *metalink.Problem
	if m == nil && errors.As(err, &fatal) {
		fmt.Fprintf(w, "%s: invalid\n  %s\n", src, formatProblem(*fatal))
		return false
	}
	if m == nil {
		fmt.Fprintf(w, "%s: unreadable: %v\n", src, err)
		return false
	}
	printDoc(w, src, m, ps)
	return !ps.HasErrors()
}

// maxFetch bounds a document fetched over HTTP (a million piece hashes
// take about 80 MB); a local one has Decode's default limit, 1 GiB.
const maxFetch = 256 << 20

// fetcher fetches documents the way get does: rsdump's HTTP client, with
// get's default stall timeout.
var fetcher = transfer.New(transfer.Options{})

// openDoc opens a local document or fetches an http(s) one, and returns
// the most bytes Decode may read from it.
func openDoc(ctx context.Context, src string) (io.ReadCloser, int64, error) {
	if !strings.HasPrefix(src, "http://") && !strings.HasPrefix(src, "https://") {
		f, err := os.Open(src)
		return f, 0, err
	}
	rc, err := fetcher.OpenDocument(ctx, src)
	if err != nil {
		// The report's line names src already.
		return nil, 0, errors.New(strings.TrimPrefix(err.Error(), src+": "))
	}
	return rc, maxFetch, nil
}

func printDoc(w io.Writer, src string, m *metalink.Metalink, ps metalink.Problems) {
	nErr := 0
	for _, p := range ps {
		if p.Severity == metalink.Error {
			nErr++
		}
	}
	verdict := "valid"
	if nErr > 0 {
		verdict = "invalid"
	}
	fmt.Fprintf(w, "%s: %s: %s, %s, %s\n", src, verdict, countOf(len(m.Files), "file"), countOf(nErr, "error"), countOf(len(ps)-nErr, "warning"))
	for i := range m.Files {
		printFile(w, &m.Files[i])
	}
	for _, p := range ps {
		fmt.Fprintf(w, "  %s\n", formatProblem(p))
	}
}

func printFile(w io.Writer, f *metalink.File) {
	fmt.Fprintf(w, "  file %q\n", f.Name)
	if f.Size != nil {
		fmt.Fprintf(w, "    size %d (%s)\n", *f.Size, fmtBytes(*f.Size))
	} else {
		fmt.Fprintf(w, "    size unknown\n")
	}
	for _, h := range f.Hashes {
		fmt.Fprintf(w, "    hash %s %s\n", h.Type, h.Value)
	}
	for _, p := range f.Pieces {
		fmt.Fprintf(w, "    pieces %s: %d of %d bytes\n", p.Type, len(p.Hashes), p.Length)
	}
	for _, u := range f.URLs {
		fmt.Fprintf(w, "    url %s (priority %d%s)\n", u.URL, u.EffectivePriority(), locationNote(u.Location))
	}
	for _, u := range f.MetaURLs {
		fmt.Fprintf(w, "    metaurl %s (%s, priority %d)\n", u.URL, u.MediaType, u.EffectivePriority())
	}
}

func locationNote(loc string) string {
	if loc == "" {
		return ""
	}
	return ", location " + loc
}

// formatProblem writes "error CODE: file "x" url[2]@priority: message (line N)".
func formatProblem(p metalink.Problem) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: ", p.Severity, p.Code)
	if p.File != "" {
		fmt.Fprintf(&b, "file %q ", p.File)
	}
	if p.Element != "" {
		b.WriteString(p.Element + ": ")
	} else if p.File != "" {
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	if p.Err != nil && !strings.Contains(p.Msg, p.Err.Error()) {
		fmt.Fprintf(&b, ": %v", p.Err)
	}
	if p.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", p.Line)
	}
	return b.String()
}
