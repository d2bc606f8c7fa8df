package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/transfer"
)

// checkDocs validates and describes each document (with asJSON, in one
// JSON document); it fails with exit status 1 when any is invalid or
// unreadable.
func checkDocs(ctx context.Context, docs []string, stdout io.Writer, asJSON bool) error {
	bad := 0
	var out []checkJSON
	for _, d := range docs {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := checkDoc(ctx, d)
		if !c.valid() {
			bad++
		}
		if asJSON {
			out = append(out, c.toJSON())
		} else {
			c.print(stdout)
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Documents []checkJSON `json:"documents"`
			Invalid   int         `json:"invalid"`
		}{out, bad}); err != nil {
			return err
		}
	}
	if bad > 0 {
		return exitError{exitFailed, fmt.Errorf("%d of %s invalid or unreadable", bad, finding.Plural(len(docs), "document"))}
	}
	return nil
}

// checked is what --check found in one document.
type checked struct {
	src        string
	m          *metalink.Metalink
	ps         []finding.Finding
	fatal      *finding.Finding // the document is not Metalink at all
	unreadable error
}

func (c *checked) valid() bool {
	return c.m != nil && !finding.HasErrors(c.ps)
}

func checkDoc(ctx context.Context, src string) *checked {
	c := &checked{src: src}
	rc, maxBytes, err := openDoc(ctx, src)
	if err != nil {
		c.unreadable = err
		return c
	}
	defer rc.Close()
	c.m, c.ps, err = metalink.DecodeLimits(rc, metalink.Limits{MaxBytes: maxBytes})
	if c.m == nil && !errors.As(err, &c.fatal) {
		c.unreadable = err
	}
	return c
}

// print writes the report on one document.
func (c *checked) print(w io.Writer) {
	switch {
	case c.fatal != nil:
		fmt.Fprintf(w, "%s: invalid\n  %s\n", c.src, escapeControl(formatProblem(*c.fatal)))
	case c.m == nil:
		fmt.Fprintf(w, "%s: unreadable: %v\n", c.src, c.unreadable)
	default:
		printDoc(w, c.src, c.m, c.ps)
	}
}

type checkJSON struct {
	Source   string          `json:"source"`
	Valid    bool            `json:"valid"`
	Error    string          `json:"error,omitempty"`
	Files    []checkFileJSON `json:"files"`
	Problems []problemJSON   `json:"problems"`
}

type checkFileJSON struct {
	Name   string       `json:"name"`
	Size   *int64       `json:"size"`
	Hashes []hashJSON   `json:"hashes"`
	Pieces []piecesJSON `json:"pieces"`
	URLs   []urlJSON    `json:"urls"`
}

type hashJSON struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

type piecesJSON struct {
	Type   string `json:"type"`
	Length int64  `json:"length"`
	Count  int    `json:"count"`
}

type urlJSON struct {
	URL      string `json:"url"`
	Priority int    `json:"priority"`
	Location string `json:"location,omitempty"`
}

type problemJSON struct {
	Severity string `json:"severity"`
	Code     string `json:"code"`
	Text     string `json:"message"`
}

func (c *checked) toJSON() checkJSON {
	j := checkJSON{Source: c.src, Valid: c.valid(), Files: []checkFileJSON{}, Problems: []problemJSON{}}
	if c.unreadable != nil {
		j.Error = c.unreadable.Error()
	}
	ps := c.ps
	if c.fatal != nil {
		ps = []finding.Finding{*c.fatal}
	}
	for _, p := range ps {
		j.Problems = append(j.Problems, problemJSON{p.Severity.String(), p.Code, formatProblem(p)})
	}
	if c.m == nil {
		return j
	}
	for _, f := range c.m.Files {
		fj := checkFileJSON{Name: f.Name, Size: f.Size, Hashes: []hashJSON{}, Pieces: []piecesJSON{}, URLs: []urlJSON{}}
		for _, h := range f.Hashes {
			fj.Hashes = append(fj.Hashes, hashJSON{h.Type, h.Value})
		}
		for _, p := range f.Pieces {
			fj.Pieces = append(fj.Pieces, piecesJSON{p.Type, p.Length, len(p.Hashes)})
		}
		for _, u := range f.URLs {
			fj.URLs = append(fj.URLs, urlJSON{u.URL, u.EffectivePriority(), u.Location})
		}
		j.Files = append(j.Files, fj)
	}
	return j
}

// maxFetch bounds a document fetched over HTTP or from S3 (a million
// piece hashes take about 80 MB); a local one has maxLocal.
const maxFetch = 256 << 20

// fetcher fetches documents the way get does: rsdump's HTTP client, with
// get's default stall timeout.
var fetcher = transfer.New(transfer.Options{})

// maxLocal bounds a local document: Decode's default limit.
const maxLocal = 1 << 30

// openDoc opens a local document or fetches an http(s) or s3:// one
// (both through resourcesync.Opener, the one document opener), and
// returns the most bytes Decode may read from it.
func openDoc(ctx context.Context, src string) (io.ReadCloser, int64, error) {
	if !resourcesync.IsURL(src) {
		rc, err := resourcesync.Opener{MaxBytes: maxLocal}.Open(ctx, src)
		return rc, maxLocal, err
	}
	rc, err := fetcher.OpenDocument(ctx, src)
	if err != nil {
		// The report's line names src already.
		return nil, 0, errors.New(strings.TrimPrefix(err.Error(), src+": "))
	}
	return rc, maxFetch, nil
}

func printDoc(w io.Writer, src string, m *metalink.Metalink, ps []finding.Finding) {
	nErr := 0
	for _, p := range ps {
		if p.Severity == finding.Error {
			nErr++
		}
	}
	verdict := "valid"
	if nErr > 0 {
		verdict = "invalid"
	}
	fmt.Fprintf(w, "%s: %s: %s, %s, %s\n", src, verdict, finding.Plural(len(m.Files), "file"), finding.Plural(nErr, "error"), finding.Plural(len(ps)-nErr, "warning"))
	for i := range m.Files {
		printFile(w, &m.Files[i])
	}
	for _, p := range ps {
		fmt.Fprintf(w, "  %s\n", escapeControl(formatProblem(p)))
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
func formatProblem(p finding.Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: ", p.Severity, p.Code)
	if p.Path != "" {
		fmt.Fprintf(&b, "file %q ", p.Path)
	}
	if p.Element != "" {
		b.WriteString(p.Element + ": ")
	} else if p.Path != "" {
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
