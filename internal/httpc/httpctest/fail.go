package httpctest

import (
	"net/http"
	"sync"
	"sync/atomic"
)

// Failing is a handler that answers the first requests for some paths
// with an error status before serving them, and counts what it refused.
type Failing struct {
	Refused atomic.Int64 // requests answered with the error status
	h       http.Handler
	code    int
	match   func(path string) bool
	times   int
	mu      sync.Mutex
	seen    map[string]int
}

// FailingFirst wraps h: the first times requests for each path that
// match accepts are answered code (503, say: a server briefly
// unavailable), the later ones served by h.
func FailingFirst(h http.Handler, code, times int, match func(path string) bool) *Failing {
	return &Failing{h: h, code: code, match: match, times: times, seen: map[string]int{}}
}

func (f *Failing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := false
	if f.match(r.URL.Path) {
		f.mu.Lock()
		f.seen[r.URL.Path]++
		fail = f.seen[r.URL.Path] <= f.times
		f.mu.Unlock()
	}
	if fail {
		f.Refused.Add(1)
		http.Error(w, http.StatusText(f.code), f.code)
		return
	}
	f.h.ServeHTTP(w, r)
}

// Reset forgets the paths seen: each fails again its first times.
func (f *Failing) Reset() {
	f.mu.Lock()
	clear(f.seen)
	f.mu.Unlock()
}
