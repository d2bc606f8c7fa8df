package transfer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/flock"
	mt "github.com/rsdump/rsdump/internal/mirrortest"
)

const plen = 64 << 10

func TestHealthyMirrorsShareWork(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		data := payload(3<<20+123, 1)
		a, _ := serve(t, data, mt.RateLimit(4<<20))
		b, _ := serve(t, data, mt.RateLimit(4<<20))
		c, _ := serve(t, data, mt.RateLimit(4<<20))
		dir := t.TempDir()
		res, err := get(t, fastOptions(), dir, fileFor("f.bin", data, plen, a.URL, b.URL, c.URL))
		if err != nil {
			t.Fatal(err)
		}
		mustMatch(t, dir, "f.bin", data)
		for _, m := range res[0].Mirrors {
			if m.Bytes < int64(len(data))/6 {
				t.Errorf("%s served %d of %d bytes: work not shared", m.URL, m.Bytes, len(data))
			}
		}
	})
}

// Each fault alone, on one of two mirrors, still gives the right bytes;
// drop says whether the faulty mirror must end up dropped.
func TestEachFaultAlone(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		cases := []struct {
			name string
			opts []mt.Option
			drop string // substring of the drop reason, "" = must not be dropped
		}{
			{"rate+latency", []mt.Option{mt.RateLimit(1 << 20), mt.Latency(20 * time.Millisecond)}, ""},
			{"corrupt-all", []mt.Option{mt.Corrupt(1, plen)}, "failed their hash"},
			{"drop-after", []mt.Option{mt.DropAfter(10 << 10)}, "failures in a row"},
			{"404", []mt.Option{mt.Status(404, 1, "")}, "404"},
			{"410", []mt.Option{mt.Status(410, 1, "")}, "410"},
			{"429", []mt.Option{mt.Status(429, 0.5, "1")}, ""},
			{"500", []mt.Option{mt.Status(500, 0.3, "")}, ""},
			{"503-always", []mt.Option{mt.Status(503, 1, "")}, "503"},
			{"stall", []mt.Option{mt.StallAfter(4<<10, 5*time.Second)}, "any"},
			{"no-range", []mt.Option{mt.NoRange()}, ""}, // not dropped: see TestNoRangeNotDropped
			{"wrong-content-range", []mt.Option{mt.WrongRange()}, "Content-Range"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				data := payload(1<<20+777, 2)
				bad, _ := serve(t, data, tc.opts...)
				good, _ := serve(t, data, mt.RateLimit(8<<20))
				dir := t.TempDir()
				res, err := get(t, fastOptions(), dir, fileFor("f.bin", data, plen, bad.URL, good.URL))
				if err != nil {
					t.Fatal(err)
				}
				mustMatch(t, dir, "f.bin", data)
				got := mirrorResult(t, res[0], bad.URL).Dropped
				if tc.drop != "any" && ((tc.drop == "") != (got == "") || !strings.Contains(got, tc.drop)) {
					t.Errorf("faulty mirror dropped for %q, want %q", got, tc.drop)
				}
			})
		}
	})
}

func TestRefusedMirror(t *testing.T) {
	t.Parallel()
	data := payload(300<<10, 3)
	good, _ := serve(t, data)
	refused := mt.RefusedURL()
	dir := t.TempDir()
	res, err := get(t, fastOptions(), dir, fileFor("f.bin", data, plen, refused, good.URL))
	if err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "f.bin", data)
	if mirrorResult(t, res[0], good.URL).Bytes != int64(len(data)) {
		t.Error("the good mirror did not serve everything")
	}
	// The refused connections brought no byte: nothing was fetched twice.
	if res[0].Refetch != 0 {
		t.Errorf("%d pieces counted as refetched; the refused mirror sent none", res[0].Refetch)
	}
}

func TestMixedFaults(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		for seed := uint64(1); seed <= 3; seed++ {
			data := payload(2<<20+5, seed)
			var urls []string
			for _, opts := range [][]mt.Option{
				{mt.Corrupt(0.2, plen), mt.Seed(seed)},
				{mt.DropRate(0.5), mt.Seed(seed), mt.RateLimit(4 << 20)},
				{mt.Status(503, 0.3, "0"), mt.Seed(seed), mt.Latency(5 * time.Millisecond)},
				{mt.StallRate(0.3, 2*time.Second), mt.Seed(seed)},
				{mt.WrongRange()},
			} {
				s, _ := serve(t, data, opts...)
				urls = append(urls, s.URL)
			}
			urls = append(urls, mt.RefusedURL())
			dir := t.TempDir()
			if _, err := get(t, fastOptions(), dir, fileFor("f.bin", data, plen, urls...)); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			mustMatch(t, dir, "f.bin", data)
		}
	})
}

// A mirror with a few bad blocks keeps serving its good ones; the bad
// pieces are fetched again elsewhere.
func TestFewBadBlocksStillContribute(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		data := payload(4<<20, 4)
		flaky, _ := serve(t, data, mt.Corrupt(0.1, plen))
		good, _ := serve(t, data, mt.RateLimit(6<<20))
		dir := t.TempDir()
		res, err := get(t, fastOptions(), dir, fileFor("f.bin", data, plen, flaky.URL, good.URL))
		if err != nil {
			t.Fatal(err)
		}
		mustMatch(t, dir, "f.bin", data)
		m := mirrorResult(t, res[0], flaky.URL)
		if m.Dropped != "" || m.Bytes < int64(len(data))/4 || m.Bad == 0 {
			t.Errorf("flaky mirror: %+v; want not dropped, a good share and some bad pieces", m)
		}
		if res[0].Refetch < m.Bad {
			t.Errorf("refetched %d pieces, %d were bad", res[0].Refetch, m.Bad)
		}
	})
}

func TestStalledMirrorRangesMove(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		data := payload(1<<20, 5)
		stall, _ := serve(t, data, mt.StallAfter(1, time.Hour))
		good, _ := serve(t, data)
		o := fastOptions()
		o.MaxFailures = 1000 // the stall timeout and the end game must move the ranges
		start := time.Now()
		dir := t.TempDir()
		if _, err := get(t, o, dir, fileFor("f.bin", data, plen, stall.URL, good.URL)); err != nil {
			t.Fatal(err)
		}
		mustMatch(t, dir, "f.bin", data)
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("took %v: stalled ranges did not move", el)
		}
	})
}

// With a single mirror there is no end game to hide behind: only the
// stall timeout gets a stalled request retried.
func TestStallTimeoutRetries(t *testing.T) {
	t.Parallel()
	data := payload(512<<10, 5)
	s, _ := serve(t, data, mt.StallAfter(1000, time.Hour), mt.StallTimes(2))
	o := fastOptions()
	o.StallTimeout = 100 * time.Millisecond
	dir := t.TempDir()
	res, err := get(t, o, dir, fileFor("f.bin", data, plen, s.URL))
	if err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "f.bin", data)
	if res[0].Retries != 2 {
		t.Errorf("%d retries, want 2 (one per stall)", res[0].Retries)
	}
}

func TestAllMirrorsDeadNamesEach(t *testing.T) {
	t.Parallel()
	data := payload(200<<10, 6)
	a, _ := serve(t, data, mt.Status(404, 1, ""))
	b, _ := serve(t, data, mt.Status(503, 1, ""))
	c, _ := serve(t, data, mt.NoRange(), mt.Corrupt(1, plen))
	d := mt.RefusedURL()
	dir := t.TempDir()
	_, err := get(t, fastOptions(), dir, fileFor("f.bin", data, plen, a.URL, b.URL, c.URL, d))
	var me *MirrorsError
	if !errors.As(err, &me) || !errors.Is(err, ErrAllMirrors) {
		t.Fatalf("error %v, want a MirrorsError", err)
	}
	for _, want := range []string{a.URL + " (HTTP 404", b.URL + " (6 failures in a row, last: HTTP 503", c.URL + " (HTTP 200 to a range request: server does not honour range requests; streaming the whole file failed: piece 0: piece hash mismatch", d + " (6 failures"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "f.bin")); err == nil {
		t.Error("f.bin exists after failure")
	}
}

// A dead mirror is retried with backoff, never in a tight loop: the
// number of requests it sees is bounded by MaxFailures.
func TestDeadMirrorNotHammered(t *testing.T) {
	t.Parallel()
	data := payload(2<<20, 7)
	dead, dm := serve(t, data, mt.Status(503, 1, ""))
	good, _ := serve(t, data, mt.RateLimit(4<<20))
	dir := t.TempDir()
	if _, err := get(t, fastOptions(), dir, fileFor("f.bin", data, plen, dead.URL, good.URL)); err != nil {
		t.Fatal(err)
	}
	if n := dm.Requests.Load(); n > int64(fastOptions().MaxFailures+fastOptions().PerMirror) {
		t.Errorf("dead mirror got %d requests", n)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	data := payload(256<<10, 8)
	busy, bm := serve(t, data, mt.Status(429, 1, "3")) // 30 ms under fastRetries
	o := fastOptions()
	o.MaxFailures, o.PerMirror = 3, 1
	start := time.Now()
	_, err := get(t, o, t.TempDir(), fileFor("f.bin", data, plen, busy.URL))
	if !errors.Is(err, ErrAllMirrors) {
		t.Fatalf("err %v", err)
	}
	if el := time.Since(start); el < 50*time.Millisecond || bm.Requests.Load() > 3+int64(o.PerMirror) {
		t.Errorf("%d requests in %v: Retry-After ignored", bm.Requests.Load(), el)
	}
}

func TestNoPieceHashesWrongHashNeverPublished(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		data := payload(1<<20+3, 9)
		s, _ := serve(t, data)
		f := fileFor("f.bin", data, 0, s.URL)
		f.Hash = sha([]byte("something else"))
		dir := t.TempDir()
		_, err := get(t, fastOptions(), dir, f)
		if !errors.Is(err, ErrFileHash) {
			t.Fatalf("err %v, want ErrFileHash", err)
		}
		for _, n := range []string{"f.bin", "f.bin.part", "f.bin.rsdump-state"} {
			if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
				t.Errorf("%s exists", n)
			}
		}
	})
}

// A corrupting mirror without piece hashes is caught by the whole-file
// hash: the file never gets its name.
func TestNoPieceHashesCorruptCaught(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		data := payload(1<<20, 10)
		s, _ := serve(t, data, mt.Corrupt(0.5, plen))
		dir := t.TempDir()
		_, err := get(t, fastOptions(), dir, fileFor("f.bin", data, 0, s.URL))
		if !errors.Is(err, ErrFileHash) {
			t.Fatalf("err %v, want ErrFileHash", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "f.bin")); err == nil {
			t.Error("f.bin exists")
		}
	})
}

func TestNoPieceHashesGood(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		data := payload(3<<20+1, 11)
		a, _ := serve(t, data)
		b, _ := serve(t, data, mt.Status(503, 0.3, ""))
		o := fastOptions()
		o.RangeSize = 100 << 10
		dir := t.TempDir()
		if _, err := get(t, o, dir, fileFor("f.bin", data, 0, a.URL, b.URL)); err != nil {
			t.Fatal(err)
		}
		mustMatch(t, dir, "f.bin", data)
	})
}

// The scheduler gives more work to the faster mirror: through piece
// completions when every slot is used, and by choosing it for free slots
// when the budget is smaller than the mirrors could take.
func TestFasterMirrorGetsMoreWork(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ conns, pct int }{{6, 75}, {2, 90}} {
		conns := tc.conns
		data := payload(3<<20, 12)
		slow, _ := serve(t, data, mt.RateLimit(1<<20))
		fast, _ := serve(t, data, mt.RateLimit(12<<20))
		o := fastOptions()
		o.Connections, o.PerMirror = conns, 3
		dir := t.TempDir()
		res, err := get(t, o, dir, fileFor("f.bin", data, plen, slow.URL, fast.URL))
		if err != nil {
			t.Fatal(err)
		}
		mustMatch(t, dir, "f.bin", data)
		if got := mirrorResult(t, res[0], fast.URL).Bytes; got < int64(len(data)*tc.pct/100) {
			t.Errorf("%d connections: fast mirror served %d of %d bytes", conns, got, len(data))
		}
	}
}

// Two runs never write the same .part: the second is refused.
func TestPartLocked(t *testing.T) {
	t.Parallel()
	data := payload(100<<10, 13)
	s, _ := serve(t, data)
	dir := t.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, "f.bin.part"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := flock.Try(f, false); err != nil {
		t.Fatal(err)
	}
	_, err = get(t, fastOptions(), dir, fileFor("f.bin", data, plen, s.URL))
	if err == nil || !strings.Contains(err.Error(), "another rsdump") {
		t.Fatalf("err %v, want a lock error", err)
	}
}

// A server that ignores Range beside one that honours it is reported by a
// MirrorNoRange event and MirrorResult.NoRange, never as dropped, and
// gets no more than the requests that found out.
func TestNoRangeNotDropped(t *testing.T) {
	t.Parallel()
	data := payload(1<<20+777, 2)
	nr, nm := serve(t, data, mt.NoRange())
	good, _ := serve(t, data, mt.RateLimit(8<<20))
	o := fastOptions()
	var mu sync.Mutex
	var events []finding.Event
	o.Events = func(e finding.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }
	dir := t.TempDir()
	res, err := get(t, o, dir, fileFor("f.bin", data, plen, nr.URL, good.URL))
	if err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "f.bin", data)
	if m := mirrorResult(t, res[0], nr.URL); m.Dropped != "" || !m.NoRange {
		t.Errorf("mirror without Range: %+v; want NoRange and not dropped", m)
	}
	noRange := 0
	for _, e := range events {
		switch e := e.(type) {
		case *MirrorDropped:
			t.Errorf("dropped %s: %s", e.URL, e.Reason)
		case *MirrorNoRange:
			if e.URL == nr.URL && strings.Contains(e.Reason, "range") {
				noRange++
			}
		}
	}
	if noRange != 1 || nm.Requests.Load() > int64(o.PerMirror) {
		t.Errorf("%d MirrorNoRange events, %d requests to the mirror; want 1 and at most %d", noRange, nm.Requests.Load(), o.PerMirror)
	}
}

// A server that ignores Range still delivers the file when it is the only
// one left: in one request from the start, each piece checked on the way.
func TestNoRangeStreamsWholeFile(t *testing.T) {
	t.Parallel()
	for _, hashes := range []int64{plen, 0} {
		data := payload(700<<10+9, 14)
		s, m := serve(t, data, mt.NoRange())
		dir := t.TempDir()
		res, err := get(t, fastOptions(), dir, fileFor("f.bin", data, hashes, s.URL))
		if err != nil {
			t.Fatal(err)
		}
		mustMatch(t, dir, "f.bin", data)
		if got := mirrorResult(t, res[0], s.URL).Bytes; got != int64(len(data)) || m.Requests.Load() > int64(fastOptions().PerMirror)+1 {
			t.Errorf("pieces %d: credited %d bytes, %d requests", hashes, got, m.Requests.Load())
		}
	}
}

// A copy that has stalled mid-file is duplicated on a mirror that is
// moving, long before the stall timeout, and the stalled connection is
// freed when the duplicate wins.
func TestStalledCopyDuplicatedMidFile(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		data := payload(4<<20, 15)
		stall, sm := serve(t, data, mt.StallAfter(1, time.Hour))
		good, _ := serve(t, data, mt.RateLimit(2<<20))
		o := fastOptions()
		o.StallTimeout, o.PerMirror, o.Connections = time.Minute, 2, 4
		dir := t.TempDir()
		start := time.Now()
		if _, err := get(t, o, dir, fileFor("f.bin", data, plen, good.URL, stall.URL)); err != nil {
			t.Fatal(err)
		}
		mustMatch(t, dir, "f.bin", data)
		if el, n := time.Since(start), sm.Requests.Load(); n <= 2 || el > 5*time.Second {
			t.Errorf("stalled mirror got %d requests in %v: its stuck copies were not duplicated and freed", n, el)
		}
	})
}
