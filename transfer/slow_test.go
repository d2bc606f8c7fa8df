package transfer

import (
	"errors"
	"strings"
	"testing"
	"time"

	mt "github.com/rsdump/rsdump/internal/mirrortest"
)

// drip sends 4 bytes every 20 ms on each connection: 200 B/s, never a
// stall, 5 minutes for a piece of 64 KiB.
func drip() mt.Option { return mt.Drip(4, 20*time.Millisecond) }

// A drip mirror listed first beside a healthy one is overtaken, even for
// files of 1 to 4 pieces, where every worker used to sit on a drip copy
// with none left for the end game.
func TestDripMirrorOvertaken(t *testing.T) {
	t.Parallel()
	for _, pieces := range []int{1, 2, 4} {
		data := payload(pieces*plen-10, uint64(70+pieces))
		slow, _ := serve(t, data, drip())
		good, _ := serve(t, data)
		o := fastOptions()
		o.MinSpeed = -1 // the end game alone must do it
		dir := t.TempDir()
		start := time.Now()
		res, err := get(t, o, dir, fileFor("f.bin", data, plen, slow.URL, good.URL))
		if err != nil {
			t.Fatalf("%d pieces: %v", pieces, err)
		}
		mustMatch(t, dir, "f.bin", data)
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%d pieces: took %v", pieces, el)
		}
		if got := mirrorResult(t, res[0], good.URL).Bytes; got != int64(len(data)) {
			t.Errorf("%d pieces: healthy mirror served %d of %d bytes", pieces, got, len(data))
		}
	}
}

// A drip mirror alone fails the file within about one speed window, with
// an error naming the mirror and its speed; beside a healthy mirror it is
// dropped for its speed and the file completes.
func TestMinSpeed(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		data := payload(4*plen, 75)
		slow, _ := serve(t, data, drip())
		o := fastOptions()
		o.MinSpeedWindow = 300 * time.Millisecond
		start := time.Now()
		_, err := get(t, o, t.TempDir(), fileFor("f.bin", data, plen, slow.URL))
		if !errors.Is(err, ErrAllMirrors) || !strings.Contains(err.Error(), slow.URL+" (") || !strings.Contains(err.Error(), " B/s over 3") {
			t.Fatalf("alone: error %v, want it to name %s and its speed", err, slow.URL)
		}
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("alone: failed after %v", el)
		}

		data = payload(16*plen, 77)
		slow, _ = serve(t, data, drip())
		good, _ := serve(t, data, mt.RateLimit(1<<20))
		dir := t.TempDir()
		res, err := get(t, o, dir, fileFor("f.bin", data, plen, slow.URL, good.URL))
		if err != nil {
			t.Fatal(err)
		}
		mustMatch(t, dir, "f.bin", data)
		if m := mirrorResult(t, res[0], slow.URL); !strings.Contains(m.Dropped, "below the minimum speed") {
			t.Errorf("drip mirror beside a healthy one: %+v, want dropped for its speed", m)
		}
	})
}

// A body longer than the range asked for (chunked, so no Content-Length
// gives it away) fails its request and drops the mirror: alone the file
// fails, beside a healthy mirror it completes from that one. The same
// holds for a server without Range support streaming the whole file.
func TestOverlongBodyRefused(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		data := payload(3*plen+5, 76)
		for _, tc := range []struct {
			name string
			opts []mt.Option
		}{{"range", []mt.Option{mt.Overlong(100)}}, {"no-range", []mt.Option{mt.Overlong(100), mt.NoRange()}}} {
			long, _ := serve(t, data, tc.opts...)
			_, err := get(t, fastOptions(), t.TempDir(), fileFor("f.bin", data, plen, long.URL))
			if !errors.Is(err, ErrAllMirrors) || !strings.Contains(err.Error(), "body longer than") {
				t.Errorf("%s alone: error %v, want the mirror dropped for a body too long", tc.name, err)
			}
			if tc.name == "no-range" {
				continue
			}
			good, _ := serve(t, data)
			dir := t.TempDir()
			res, err := get(t, fastOptions(), dir, fileFor("f.bin", data, plen, long.URL, good.URL))
			if err != nil {
				t.Fatal(err)
			}
			mustMatch(t, dir, "f.bin", data)
			if m := mirrorResult(t, res[0], long.URL); !strings.Contains(m.Dropped, "body longer than") {
				t.Errorf("%s: overlong mirror %+v, want dropped", tc.name, m)
			}
		}
	})
}

// A server without Range support, streaming the whole file as the last
// resort, is held to the minimum speed too.
func TestMinSpeedStreamedWholeFile(t *testing.T) {
	t.Parallel()
	data := payload(4*plen, 78)
	s, _ := serve(t, data, mt.NoRange(), drip())
	o := fastOptions()
	o.MinSpeedWindow = 300 * time.Millisecond
	start := time.Now()
	_, err := get(t, o, t.TempDir(), fileFor("f.bin", data, plen, s.URL))
	if !errors.Is(err, ErrAllMirrors) || !strings.Contains(err.Error(), "streaming the whole file failed") || !strings.Contains(err.Error(), "below the minimum speed") {
		t.Errorf("error %v, want the streamed mirror failed for its speed", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("failed after %v", el)
	}
}
