// Package pause waits between the attempts of a loop (a claim polled, a
// conflicting write tried again, a request retried) in the one way that
// a cancelled run stops at once.
package pause

import (
	"context"
	"time"
)

// For waits d, or until ctx is done, whichever comes first: the
// context's error in the second case, which the loop returns.
func For(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
