package httpctest

import (
	"net/http"
	"strings"
	"sync/atomic"
)

// Counting wraps h and adds to n the body bytes it sends in answer to a
// path that ends in suffix (".zip": what a client fetched of packages).
func Counting(h http.Handler, suffix string, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, suffix) {
			w = &countingWriter{ResponseWriter: w, n: n}
		}
		h.ServeHTTP(w, r)
	})
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n.Add(int64(n))
	return n, err
}
