package transfer

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// A server that ignores Range can still deliver the file, once, from the
// start. Such a mirror is not dropped but kept for one connection: when
// every mirror taking range requests is gone, the file is streamed from it: pieces already verified are read
// past, the others are hashed and written as they go by.

// streamCandidate picks the mirror to stream from, once per download.
func (d *download) streamCandidate() *mirror {
	if d.streamTried || d.held {
		return nil // held: a whole file in one response cannot wait for its reader
	}
	for _, m := range d.mirrors {
		if m.noRange != "" && m.dropped == "" {
			d.streamTried = true
			return m
		}
	}
	return nil
}

// streamFallback streams the file; if that fails too, the error names
// every mirror and why, the streamed one included.
func (d *download) streamFallback() error {
	err := d.streamAll(d.ctx, d.stream)
	if err == nil || d.ctx.Err() != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stream.dropped = d.stream.noRange + "; streaming the whole file failed: " + trimURL(err.Error(), d.stream.url)
	return &MirrorsError{File: d.f.Name, Mirrors: d.mirrorResults()}
}

// streamAll fetches the whole file from m in one request.
func (d *download) streamAll(ctx context.Context, m *mirror) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watch := time.AfterFunc(d.g.opts.StallTimeout, func() { cancel(ErrStalled) })
	defer watch.Stop()
	resp, err := d.streamRequest(ctx, m)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	m.pace.Begin(time.Now().UnixNano())
	defer m.pace.End()
	body := &watchedReader{r: resp.Body, watch: watch, stall: d.g.opts.StallTimeout, d: d, m: m}
	for i := range d.n {
		if err := d.streamPiece(body, m, i); err != nil {
			if c := context.Cause(ctx); c != nil {
				err = c
			}
			return fmt.Errorf("%s: %w", m.url, err)
		}
	}
	var one [1]byte
	if n, _ := io.ReadFull(resp.Body, one[:]); n > 0 {
		return fmt.Errorf("%s: body longer than the file's %d bytes: %w", m.url, d.f.Size, ErrBadRange)
	}
	return nil
}

func (d *download) streamRequest(ctx context.Context, m *mirror) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.url, err)
	}
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := d.g.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.url, err)
	}
	if resp.StatusCode != http.StatusOK || (resp.ContentLength >= 0 && resp.ContentLength != d.f.Size) {
		drain(resp)
		return nil, fmt.Errorf("%s: HTTP %d, %d bytes for a file of %d: %w", m.url, resp.StatusCode, resp.ContentLength, d.f.Size, ErrBadRange)
	}
	return resp, nil
}

// streamPiece reads piece i from the body; a piece not yet verified is
// written at its offset while hashed, and counts only if its hash matches.
func (d *download) streamPiece(body io.Reader, m *mirror, i int) error {
	off, end := d.span(i)
	d.mu.Lock()
	done := d.pieces[i].done
	d.mu.Unlock()
	if done {
		_, err := io.CopyN(io.Discard, body, end-off)
		return err
	}
	h := d.pieceHash()
	w := io.Writer(io.NewOffsetWriter(d.part, off))
	if h != nil {
		w = io.MultiWriter(w, h)
	}
	if _, err := io.CopyN(w, body, end-off); err != nil {
		return err
	}
	if h != nil && hex.EncodeToString(h.Sum(nil)) != d.f.Pieces.Hashes[i] {
		return fmt.Errorf("piece %d: %w", i, ErrPieceHash)
	}
	d.mu.Lock()
	a := &attempt{piece: i, m: m, start: time.Now()}
	d.complete(a, &d.pieces[i])
	d.mu.Unlock()
	return nil
}

// watchedReader counts bytes, pushes the stall deadline back on each read
// that makes progress, and fails below the minimum speed.
type watchedReader struct {
	r     io.Reader
	watch *time.Timer
	stall time.Duration
	d     *download
	m     *mirror
}

func (w *watchedReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.watch.Reset(w.stall)
		w.d.received(w.m, n)
		if err := w.d.checkPace(w.m, n, time.Now().UnixNano()); err != nil {
			return n, err
		}
	}
	if errors.Is(err, io.EOF) && n == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	return n, err
}
