package transfer

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	mt "github.com/rsdump/rsdump/internal/mirrortest"
)

// TestRanges: reads at any offset and of any size give the file's bytes;
// small reads come from blocks read ahead; a mirror that fails, ignores
// Range or answers another range is passed over for the next.
func TestRanges(t *testing.T) {
	t.Parallel()
	data := payload(3<<20+123, 7)
	for _, bad := range []struct {
		name string
		opt  mt.Option
	}{{"500", mt.Status(500, 1, "")}, {"no Range", mt.NoRange()}, {"wrong range", mt.WrongRange()}, {"drops", mt.DropAfter(10)}} {
		t.Run(bad.name, func(t *testing.T) {
			badSrv, badM := serve(t, data, bad.opt)
			good, goodM := serve(t, data)
			f := fileFor("f.bin", data, 0, badSrv.URL+"/f.bin", good.URL+"/f.bin")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r, err := New(fastOptions()).Ranges(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if err := iotest.TestReader(io.NewSectionReader(r, 0, r.Size()), data); err != nil {
				t.Fatal(err)
			}
			// The bad mirror is asked first, once: then it goes to the back.
			if badM.Requests.Load() != 1 || goodM.Requests.Load() == 0 {
				t.Errorf("requests: bad mirror %d, good %d", badM.Requests.Load(), goodM.Requests.Load())
			}
		})
	}
}

// TestRangesFetchesWhatIsRead: 30-byte reads here and there, as a ZIP
// reader makes, fetch a block each, not the file; a read past the end is
// io.EOF.
func TestRangesFetchesWhatIsRead(t *testing.T) {
	t.Parallel()
	data := payload(8<<20, 3)
	srv, m := serve(t, data)
	r, err := New(fastOptions()).Ranges(context.Background(), fileFor("f.bin", data, 0, srv.URL+"/f.bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, 10, 1 << 20, 5<<20 + 7, int64(len(data)) - 30} {
		p := make([]byte, 30)
		if n, err := r.ReadAt(p, off); n != 30 || err != nil || !bytes.Equal(p, data[off:off+30]) {
			t.Fatalf("at %d: %d %v", off, n, err)
		}
	}
	if got := r.Fetched(); got > 5*minAhead {
		t.Errorf("fetched %d bytes for five small reads", got)
	}
	if m.Requests.Load() != 4 { // 0 and 10 share a block
		t.Errorf("%d requests for five small reads, two in one block", m.Requests.Load())
	}
	if n, err := r.ReadAt(make([]byte, 10), int64(len(data))-4); n != 4 || err != io.EOF {
		t.Errorf("read over the end: %d %v", n, err)
	}
}

// TestRangesAllMirrorsFail: the error names the file and the bytes, and
// what each mirror answered, once.
func TestRangesAllMirrorsFail(t *testing.T) {
	t.Parallel()
	data := payload(1<<20, 5)
	a, _ := serve(t, data, mt.Status(503, 1, ""))
	f := fileFor("f.bin", data, 0, a.URL+"/f.bin", mt.RefusedURL())
	r, err := New(fastOptions()).Ranges(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.ReadAt(make([]byte, 100), 1000)
	if err == nil {
		t.Fatal("read from failing mirrors succeeded")
	}
	for _, want := range []string{"f.bin: bytes 1000-", "503", "refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not say %q", err, want)
		}
	}
	if strings.Count(err.Error(), "HTTP 503") != 1 { // not "503": a port may hold it
		t.Errorf("the same failure told more than once: %v", err)
	}
}
