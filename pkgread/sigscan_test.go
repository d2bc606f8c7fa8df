package pkgread

import "testing"

// TestSigScan finds a descriptor signature split across writes of any size.
func TestSigScan(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		writes []string
		at     int64
	}{
		{[]string{"xxPK\x07\x08yy"}, 2},
		{[]string{"xxPK", "\x07\x08yy"}, 2},
		{[]string{"xxP", "K\x07\x08"}, 2},
		{[]string{"x", "P", "K", "\x07", "\x08"}, 1},
		{[]string{"PK\x07", "\x08"}, 0},
		{[]string{"abc", "PK\x07\x09", "PK\x07\x08"}, 7},
		{[]string{"PK\x07", "x\x08", "PK"}, -1},
		{[]string{"", "PK", "", "\x07\x08"}, 0},
	} {
		s := &sigScan{at: -1}
		for _, w := range c.writes {
			s.Write([]byte(w))
		}
		if s.at != c.at {
			t.Errorf("%q: at %d, want %d", c.writes, s.at, c.at)
		}
	}
}
