package unixnano

import (
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	local := time.FixedZone("X", 3600)
	for _, tc := range []struct {
		in   time.Time
		want int64
	}{
		{time.Time{}, 0},
		{time.Date(2026, 12, 5, 16, 0, 0, 123, time.UTC), 1796486400000000123},
		{time.Date(2026, 12, 5, 17, 0, 0, 123, local), 1796486400000000123},
		{time.Unix(0, -5), -5}, // before the epoch: still a time
	} {
		n := Of(tc.in)
		if n != tc.want {
			t.Errorf("Of(%v) = %d, want %d", tc.in, n, tc.want)
		}
		back := Time(n)
		if !back.Equal(tc.in) || !tc.in.IsZero() && back.Location() != time.UTC {
			t.Errorf("Time(%d) = %v, want %v in UTC", n, back, tc.in)
		}
	}
}
