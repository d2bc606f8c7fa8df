package transfer

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	mt "github.com/rsdump/rsdump/transfer/mirrortest"
)

// TestProgressTotalAtStart: the total Progress gives is every file's
// bytes from the moment Get starts, and the share done never falls back,
// however few files are fetched at a time. (It used to grow as each file
// started, so the share done fell each time one did.)
func TestProgressTotalAtStart(t *testing.T) {
	var files []File
	var want int64
	for i := range 4 {
		data := payload(256<<10, uint64(80+i))
		s, _ := serve(t, data, mt.RateLimit(4<<20))
		files = append(files, fileFor(fmt.Sprintf("f%d.bin", i), data, plen, s.URL))
		want += int64(len(data))
	}
	o := fastOptions()
	o.Files = 1
	g := New(o)
	var mu sync.Mutex
	var problems []string
	var polls int
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		last := 0.0
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			p := g.Progress()
			if p.Total == 0 {
				continue // Get has not started
			}
			mu.Lock()
			polls++
			share := float64(p.Done) / float64(p.Total)
			if p.Total != want || share < last {
				problems = append(problems, fmt.Sprintf("%d of %d (%.2f after %.2f)", p.Done, p.Total, share, last))
			}
			last = share
			mu.Unlock()
		}
	}()
	_, err := g.Get(ctx, t.TempDir(), files)
	close(stop)
	<-watched
	if err != nil {
		t.Fatal(err)
	}
	if polls < 10 {
		t.Fatalf("only %d polls during the transfer", polls)
	}
	if len(problems) > 0 {
		t.Errorf("total %d; %d of %d polls went wrong, the first: %s", want, len(problems), polls, problems[0])
	}
}
