package unpack

import (
	"context"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/resourcesync"
)

// An early batch the survey would plan otherwise is not adopted, nor
// staged again (its findings and package are counted already): the
// run's batch fails, naming the document.
func TestEarlyBatchPlannedOtherwise(t *testing.T) {
	t.Parallel()
	e := failedBatch(nil)
	e.items = []listItem{{n: 1, e: resourcesync.URL{Loc: "http://127.0.0.1:9/a"}}}
	l := &listRun{early: &earlyBatch{items: e.items, staged: e}}
	items := []listItem{{n: 1, e: resourcesync.URL{Loc: "http://127.0.0.1:9/b"}}}
	s := l.stage(context.Background(), "http://127.0.0.1:9/list.xml", items, true)
	if s == e {
		t.Fatal("the early batch of another entry was adopted")
	}
	if _, err := s.wait(); err == nil || !strings.Contains(err.Error(), "http://127.0.0.1:9/list.xml: the first batch staged during the survey is not the one") {
		t.Fatalf("err = %v", err)
	}
	if l.early != nil {
		t.Error("the early batch is still held")
	}
	e.items = items
	l.early = &earlyBatch{items: items, staged: e}
	if s := l.stage(context.Background(), "http://127.0.0.1:9/list.xml", items, true); s != e {
		t.Error("the early batch of the same entries was not adopted")
	}
}
