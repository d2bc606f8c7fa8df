package replica_test

import (
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
)

// TestSyncStagesWhileDownloading: sync stages a package's bitstreams from
// its verified pieces as they arrive. The server holds back the pieces of
// the package's second half (not its end, where the central directory
// is) until a bitstream of the first half is staged in DIR/.rsdump/tmp:
// on the code that downloads the whole package before reading it,
// nothing is staged and the pieces are released only by the time-out.
func TestSyncStagesWhileDownloading(t *testing.T) {
	const n, size, plen = 64, 100000, 128 << 10
	s := newSource(t, files(n, size))
	dst := t.TempDir()
	total := int64(n * size)
	var early, late atomic.Int64
	s.handler = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var first int64
			if strings.HasSuffix(r.URL.Path, ".zip") && r.Header.Get("Range") != "" {
				fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-", &first)
			}
			if first > total/2 && first < total-4*plen {
				if staged(dst, 10*time.Second) {
					early.Add(1)
				} else {
					late.Add(1)
				}
			}
			h.ServeHTTP(w, r)
		})
	}
	s.packDump(pack.Options{Compress: pack.Store, Metalink: &pack.MetalinkOptions{PieceLength: plen}})
	res, fs, _ := syncRun(t, s.srv.URL+"/", dst, replica.Options{})
	if res.Problems() != 0 || res.Written != n {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)
	if early.Load() == 0 || late.Load() > 0 {
		t.Errorf("pieces of the second half released once a bitstream was staged: %d; by the time-out, nothing staged: %d", early.Load(), late.Load())
	}
}

// staged waits up to limit for a file in dst's staging directory.
func staged(dst string, limit time.Duration) bool {
	tmp := filepath.Join(dst, filepath.FromSlash(deststate.Path(deststate.TmpDir)))
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		found := false
		filepath.WalkDir(tmp, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				found = true
				return filepath.SkipAll
			}
			return nil
		})
		if found {
			return true
		}
	}
	return false
}
