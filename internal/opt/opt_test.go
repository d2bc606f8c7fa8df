package opt

import (
	"testing"
	"time"
)

func TestDefault(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want time.Duration }{{0, 5}, {-1, 5}, {3, 3}} {
		v := c.in
		Default(&v, 5)
		if v != c.want {
			t.Errorf("Default(%d, 5) = %d, want %d", c.in, v, c.want)
		}
	}
	n := 0
	Default(&n, 7)
	if n != 7 {
		t.Errorf("Default(0, 7) on an int = %d", n)
	}
}
