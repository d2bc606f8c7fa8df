package httpc

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
)

type countKey struct{}

// WithCount returns ctx under which the body bytes of every response a
// client of this package receives are added to n: documents, detached
// manifests, Metalinks, package ranges and resources alike, however the
// request went (net/http, lean, a pipeline). A run counts what it fetched
// so, whatever part of it fetched it.
func WithCount(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, countKey{}, n)
}

// countBody has resp's body add what is read of it to the counter ctx
// carries, if any.
func countBody(ctx context.Context, resp *http.Response) {
	if n, ok := ctx.Value(countKey{}).(*atomic.Int64); ok && n != nil {
		resp.Body = &countedBody{ReadCloser: resp.Body, n: n}
	}
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
