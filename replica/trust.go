package replica

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// Trust is what a run required of the Source's signatures.
type Trust struct {
	Fingerprints []string `json:"fingerprints"`       // the keys whose signatures were required
	Pinned       bool     `json:"pinned"`             // taken from the tree's state, not given
	Replaced     []string `json:"replaced,omitempty"` // the keys pinned before, when the run was given others
}

// pin settles the keys the run requires (resourcesync.WithTrust): those
// the caller put in ctx (rsdump sync --trust), else those the tree's state
// pins. Keys given are pinned with the run's first commit, as the Source
// is, so that a run that is refused leaves the state as it was; keys
// given that differ from the pinned ones replace them, and the run says
// so. A tree with neither requires no signature.
func (s *syncer) pin(ctx context.Context) (context.Context, error) {
	pinned, err := unpack.PinnedKeys(s.tree.State())
	if err != nil {
		return nil, err
	}
	given := resourcesync.Trust(ctx)
	switch {
	case given == nil && pinned == nil:
		return ctx, nil
	case given == nil:
		s.res.Trust = &Trust{Fingerprints: pinned.Fingerprints(), Pinned: true}
		s.note("signatures required by the key pinned in %s: %s", s.dir, pinned)
		return resourcesync.WithTrust(ctx, pinned), nil
	}
	s.res.Trust = &Trust{Fingerprints: given.Fingerprints()}
	if pinned != nil && !pinned.Same(given) {
		s.res.Trust.Replaced = pinned.Fingerprints()
		s.note("the pinned key changes from %s to %s (given with --trust)", pinned, given)
	}
	if pinned == nil || !pinned.Same(given) {
		armored, err := given.Armor()
		if err != nil {
			return nil, err
		}
		t := &deststate.Trust{Fingerprints: given.Fingerprints(), Keys: string(armored), Since: time.Now().UTC()}
		s.tree.Amend(func(st *deststate.State) { st.Trust = t })
	}
	return ctx, nil
}

// refuseUnsignedTRS refuses a Tracked Resource Set under a trust: its
// Turtle carries no signature, and its members are not all vouched for by
// signed documents.
func (s *syncer) refuseUnsignedTRS(ctx context.Context) error {
	if k := resourcesync.Trust(ctx); k != nil && s.src.TRS != "" {
		return fmt.Errorf("%s: a Tracked Resource Set carries no signature: %w (signatures are required by %s)", s.src.TRS, unpack.ErrUnauthenticated, strings.TrimSpace(k.String()))
	}
	return nil
}
