package unpack

import (
	"context"
	"fmt"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/sign"
)

// ErrUnauthenticated is resourcesync's: something a run under a trust
// cannot vouch for with a signed document.
var ErrUnauthenticated = resourcesync.ErrUnauthenticated

// pinned is ctx under the keys the tree's state pins (rsdump sync --trust
// records them), unless the run was given keys of its own: a tree whose
// Source signs takes nothing unsigned by those keys, whatever command
// writes in it. A run given other keys does not change the pin; only
// sync does.
func (u *unpacker) pinned(ctx context.Context) (context.Context, error) {
	if u.opts.Dir != nil || resourcesync.Trust(ctx) != nil {
		return ctx, nil // sync pins, and set the trust itself
	}
	k, err := PinnedKeys(u.state())
	if err != nil || k == nil {
		return ctx, err
	}
	return resourcesync.WithTrust(ctx, k), nil
}

// PinnedKeys are the keys the state pins, or nil.
func PinnedKeys(st deststate.State) (*sign.Keyring, error) {
	if st.Trust == nil || st.Trust.Keys == "" {
		return nil, nil
	}
	k, err := sign.ParseKeyring([]byte(st.Trust.Keys))
	if err != nil {
		return nil, fmt.Errorf("the keys pinned in %s: %w", deststate.Path("state.json"), err)
	}
	return k, nil
}
