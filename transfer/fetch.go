package transfer

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
)

// attempt is one request for one piece from one mirror.
type attempt struct {
	id       int64
	piece    int
	m        *mirror
	dup      bool // end-game copy: buffers in memory, writes only if it wins
	ctx      context.Context
	cancel   context.CancelCauseFunc
	start    time.Time
	got      atomic.Int64
	last     atomic.Int64 // UnixNano of the last byte received
	sent     atomic.Int64 // UnixNano when the request went out, 0 before (waiting for the budget)
	buf      []byte       // an end-game copy's data
	stored   bool         // a buffered copy that was written (runBuffered)
	bodyDone time.Time    // when a buffered copy's body was read and its slots given back (hangUp); guarded by d.mu
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// readStep bounds one read of a body, so progress and the stall timer
// move at least every readStep bytes.
const readStep = 256 << 10

// fetch requests the piece's range and streams it to sink, hashing it on
// the way (pieces too large to buffer; see runBuffered for the others).
func (d *download) fetch(a *attempt, sink func(off int64, b []byte) error) error {
	off, end := d.span(a.piece)
	h := d.pieceHash()
	err := d.receive(a, end-off, func(body io.Reader, watch *time.Timer) error {
		bp := bufPool.Get().(*[]byte)
		defer bufPool.Put(bp)
		for pos := off; pos < end; {
			b := (*bp)[:min(int64(len(*bp)), end-pos)]
			if err := d.readBody(a, body, watch, b); err != nil {
				return err
			}
			if h != nil {
				h.Write(b)
			}
			if err := sink(pos, b); err != nil {
				return err
			}
			pos += int64(len(b))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return d.checkPiece(a, h)
}

// fetchInto reads the piece's range into b, which has its length.
func (d *download) fetchInto(a *attempt, b []byte) error {
	return d.receive(a, int64(len(b)), func(body io.Reader, watch *time.Timer) error {
		return d.readBody(a, body, watch, b)
	})
}

// receive sends the attempt's request, has read take the n bytes of its
// body, and checks that nothing follows them; the body, its stall watch
// and its count in the mirror's pace end on return.
func (d *download) receive(a *attempt, n int64, read func(body io.Reader, watch *time.Timer) error) error {
	resp, watch, err := d.send(a)
	if err != nil {
		return err
	}
	defer a.m.pace.End()
	defer watch.Stop()
	defer resp.Body.Close()
	if err := read(resp.Body, watch); err != nil {
		return err
	}
	return d.checkEnd(a, resp.Body, n)
}

// checkEnd fails a body that goes on past the n bytes asked for: a
// chunked answer is bounded by nothing but this count, and a server that
// sends more than it was asked cannot be trusted with what it did send.
func (d *download) checkEnd(a *attempt, body io.Reader, n int64) error {
	var one [1]byte
	k, err := io.ReadFull(body, one[:])
	switch {
	case k > 0:
		return fmt.Errorf("%s: body longer than the %d bytes asked for: %w", a.m.url, n, ErrBadRange)
	case err == io.EOF:
		return nil
	}
	return d.readError(a, err)
}

// send sends the attempt's request under a stall watch, which cancels the
// attempt when no byte arrives for StallTimeout, and counts it in its
// mirror's pace (the caller calls a.m.pace.end once the body is read).
func (d *download) send(a *attempt) (*http.Response, *time.Timer, error) {
	off, end := d.span(a.piece)
	now := time.Now().UnixNano()
	a.sent.Store(now)
	a.m.pace.Begin(now)
	watch := time.AfterFunc(d.g.opts.StallTimeout, func() { a.cancel(ErrStalled) })
	resp, err := d.request(a, off, end)
	if err != nil {
		watch.Stop()
		a.m.pace.End()
		if timeout(err) || errors.Is(context.Cause(a.ctx), ErrStalled) {
			err = &noAnswerError{err}
		}
		return nil, nil, err
	}
	return resp, watch, nil
}

// noAnswerError is a request that got no response within the stall
// timeout: the server accepted it, or not even that, and said nothing.
type noAnswerError struct{ err error }

func (e *noAnswerError) Error() string { return e.err.Error() }
func (e *noAnswerError) Unwrap() error { return e.err }

func timeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// readBody fills dst from body, crediting progress and pushing the stall
// deadline back on each read.
func (d *download) readBody(a *attempt, body io.Reader, watch *time.Timer, dst []byte) error {
	for len(dst) > 0 {
		n, err := body.Read(dst[:min(len(dst), readStep)])
		if n > 0 {
			watch.Reset(d.g.opts.StallTimeout)
			a.got.Add(int64(n))
			now := time.Now().UnixNano()
			a.last.Store(now)
			d.received(a.m, n)
			dst = dst[n:]
			if err := d.checkPace(a.m, n, now); err != nil {
				return err
			}
		}
		if err != nil && len(dst) > 0 {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return d.readError(a, err)
		}
	}
	return nil
}

func (d *download) readError(a *attempt, err error) error {
	if c := context.Cause(a.ctx); c != nil {
		return fmt.Errorf("%s: %w", a.m.url, c)
	}
	return fmt.Errorf("%s: reading body: %w", a.m.url, err)
}

func (d *download) pieceHash() hash.Hash {
	if d.f.Pieces.Hashes == nil {
		return nil
	}
	h, _ := newHash(d.f.Pieces.Type) // checked in newDownload
	return h
}

func (d *download) checkPiece(a *attempt, h hash.Hash) error {
	if h == nil {
		return nil
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != d.f.Pieces.Hashes[a.piece] {
		return fmt.Errorf("%s: piece %d: %w", a.m.url, a.piece, ErrPieceHash)
	}
	return nil
}

// request sends the range request and accepts the response only if it is
// exactly the range asked for, so an error page never reaches the file.
func (d *download) request(a *attempt, off, end int64) (*http.Response, error) {
	return rangeRequest(a.ctx, d.g.client, a.m.url, off, end, d.f.Size)
}

// rangeRequest GETs bytes off to end-1 of the file of length size at url.
func rangeRequest(ctx context.Context, c *http.Client, url string, off, end, size int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, end-1))
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.Do(req)
	if err != nil {
		if c := context.Cause(ctx); c != nil {
			return nil, fmt.Errorf("%s: %w", url, c)
		}
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if err := checkRange(resp, url, off, end, size); err != nil {
		drain(resp)
		return nil, err
	}
	return resp, nil
}

// drain lets a short error body be read so the connection can be reused.
func drain(resp *http.Response) {
	io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
}

func checkRange(resp *http.Response, url string, off, end, size int64) error {
	switch {
	case resp.StatusCode == http.StatusOK:
		return fmt.Errorf("%s: HTTP 200 to a range request: %w", url, ErrNoRange)
	case resp.StatusCode != http.StatusPartialContent:
		return &StatusError{URL: url, Status: resp.StatusCode,
			RetryAfter: httpc.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	cr := resp.Header.Get("Content-Range")
	first, last, total, ok := parseContentRange(cr)
	if !ok || first != off || last != end-1 || total != size {
		return fmt.Errorf("%s: Content-Range %q for bytes %d-%d/%d: %w", url, cr, off, end-1, size, ErrBadRange)
	}
	if resp.ContentLength >= 0 && resp.ContentLength != end-off {
		return fmt.Errorf("%s: Content-Length %d for %d bytes: %w", url, resp.ContentLength, end-off, ErrBadRange)
	}
	return nil
}

// parseContentRange reads "bytes FIRST-LAST/TOTAL" (TOTAL may be "*",
// which never matches a known size).
func parseContentRange(v string) (first, last, total int64, ok bool) {
	rest, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	span, tot, found := strings.Cut(rest, "/")
	a, b, found2 := strings.Cut(span, "-")
	if !found || !found2 {
		return 0, 0, 0, false
	}
	var e1, e2, e3 error
	first, e1 = strconv.ParseInt(a, 10, 64)
	last, e2 = strconv.ParseInt(b, 10, 64)
	total, e3 = strconv.ParseInt(tot, 10, 64)
	return first, last, total, e1 == nil && e2 == nil && e3 == nil && first <= last
}
