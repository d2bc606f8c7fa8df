// Package follow keeps a Destination up to its Source as the Source
// changes: it syncs (package replica), subscribes to the Source's
// notification channels at their WebSub hub (ResourceSync Framework and
// Change Notification §4.2), and syncs again each time a notification
// comes, signed with the subscription's secret. It renews its leases
// (never sooner than Options.MinRenew, however short the lease), tries
// again after a failure with waits that double, falls back to polling
// when no hub can be reached or nothing is heard for Options.Poll (a
// subscription waiting for its hub's verification never holds a sync
// up), and, when it stops, unsubscribes.
//
// A notification is a trigger, never a source of content: what it
// announces is fetched and checked from the Source's documents, as any
// sync does. A change notification's interval tells more: one that does
// not start where the tree is up to shows notifications were lost, which
// is reported (a Gap) before the pull that catches up, and one already
// covered (a hub's redelivery) is not pulled again.
package follow

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/opt"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
)

// Defaults of Options.
const (
	DefaultPoll         = time.Hour
	DefaultCallbackAddr = "127.0.0.1:0"
	DefaultVerifyWait   = 30 * time.Second
	// DefaultRetry is the wait before subscribing again after a hub could
	// not be reached or refused; it doubles with each failure in a row,
	// up to DefaultMaxRetry.
	DefaultRetry    = time.Minute
	DefaultMaxRetry = time.Hour
	// DefaultMinRenew is the shortest time between a subscription and
	// its renewal.
	DefaultMinRenew = time.Minute
)

// Options configure Follow.
type Options struct {
	// Sync configures each sync; its Events get every event of the syncs.
	Sync replica.Options
	// CallbackAddr is where the callback is served (host:port); default
	// 127.0.0.1 on a free port. Listener, when set, is used instead.
	CallbackAddr string
	Listener     net.Listener
	// CallbackURL is the URL the hub reaches the callback at, for one
	// behind a proxy; default http:// and the listener's address.
	CallbackURL string
	// Lease is asked of the hub; 0 takes the hub's default.
	Lease time.Duration
	// Poll is the longest time without a notification before a sync
	// anyway; default an hour.
	Poll time.Duration
	// VerifyWait bounds the wait for a hub's verification of intent;
	// Retry is the wait before subscribing again after a failure, doubled
	// with each failure in a row up to MaxRetry.
	VerifyWait, Retry, MaxRetry time.Duration
	// MinRenew is the shortest time between a subscription and its
	// renewal (at four fifths of the lease otherwise): a hub granting a
	// lease of a second is not asked every second. Default
	// DefaultMinRenew.
	MinRenew time.Duration
	// Client sends the subscription requests; default Sync.Client.
	Client *http.Client
	// Events is told of what Follow does (an Event each time) and of
	// everything the syncs tell (Sync.Events, when that is nil).
	Events func(finding.Event)
}

// EventKind says what happened.
type EventKind int

// The events Follow reports.
const (
	Synced          EventKind = iota + 1 // a sync completed (Result; Why)
	SyncFailed                           // a sync failed (Err); the next trigger tries again
	Subscribed                           // a subscription verified (Topic, Hub, Lease)
	SubscribeFailed                      // a hub could not be reached or refused (Err): polling until Retry
	Unsubscribed                         // the subscription ended, as Follow stopped
	Notified                             // a notification checked and taken (Topic, Capability, From, Until)
	Ignored                              // content ignored (Topic, Err): a missing or bad signature, an unknown callback, not a notification
	Gap                                  // a change notification starting after the tree's time or the last interval heard: notifications were lost (From, Until, Since, Why)
	Covered                              // a change notification the tree already covers: nothing to do
	Polling                              // nothing heard for Options.Poll: a sync anyway
	NoChannel                            // the Source advertises no hub: Follow polls
)

var kindNames = map[EventKind]string{
	Synced: "synced", SyncFailed: "sync failed", Subscribed: "subscribed", SubscribeFailed: "subscribe failed",
	Unsubscribed: "unsubscribed", Notified: "notified", Ignored: "ignored", Gap: "gap", Covered: "covered",
	Polling: "polling", NoChannel: "no channel",
}

func (k EventKind) String() string { return kindNames[k] }

// Event is one thing Follow did or saw. Fields that do not apply are zero.
type Event struct {
	Kind        EventKind
	Topic, Hub  string
	Capability  string
	Lease       time.Duration
	From, Until time.Time
	Since       time.Time // Gap: what the tree was up to, or the last interval heard ended at
	Why         string    // Synced: what triggered it; Gap: what follows (a pull, or none: the tree has the changes)
	Result      *replica.Result
	Err         error
}

// startWhy is the Why of the first sync.
const startWhy = "start"

// ErrNoSource is a Follow with neither a source nor a tree that records
// one.
var ErrNoSource = errors.New("nothing to follow")

// Follow syncs dir from source (the zero Location: the Source dir
// records), then follows it until ctx is done, and returns nil then,
// having unsubscribed. It returns an error only when the first sync
// cannot start (no Source, a tree it cannot use) or the callback cannot
// be served; a later failure is an event, and the next notification or
// poll tries again.
func Follow(ctx context.Context, source resourcesync.Location, dir string, o Options) error {
	f, err := newFollower(source, dir, o)
	if err != nil {
		return err
	}
	defer f.srv.Close()
	res, err := replica.Sync(ctx, source, dir, f.opts.Sync)
	if err != nil {
		return err
	}
	f.synced(res, startWhy)
	f.subscribeAll(ctx, res.Source)
	f.loop(ctx)
	f.unsubscribeAll()
	f.wg.Wait()
	return nil
}

func (o Options) withDefaults() Options {
	opt.Default(&o.Poll, DefaultPoll)
	if o.CallbackAddr == "" {
		o.CallbackAddr = DefaultCallbackAddr
	}
	opt.Default(&o.VerifyWait, DefaultVerifyWait)
	opt.Default(&o.Retry, DefaultRetry)
	opt.Default(&o.MaxRetry, max(DefaultMaxRetry, o.Retry))
	opt.Default(&o.MinRenew, DefaultMinRenew)
	if o.Client == nil {
		o.Client = o.Sync.Client
	}
	if o.Sync.Events == nil {
		o.Sync.Events = o.Events
	}
	return o
}

func (f *follower) emit(e Event) { finding.Send(f.opts.Events, e) }

// String is the event in one line.
func (e Event) String() string {
	s := e.Kind.String()
	switch e.Kind {
	case Synced:
		s += fmt.Sprintf(" (%s): the tree is up to %s", e.Why, resourcesync.FormatTime(e.Result.Until))
	case Subscribed:
		s += fmt.Sprintf(" to %s at %s, lease %s", e.Topic, e.Hub, e.Lease)
	case Notified:
		s += fmt.Sprintf(": %s on %s", e.Capability, e.Topic)
		if !e.Until.IsZero() {
			s += fmt.Sprintf(", changes from %s until %s", resourcesync.FormatTime(e.From), resourcesync.FormatTime(e.Until))
		}
	case Gap:
		s += fmt.Sprintf(": nothing was heard of the changes from %s until %s, where the notification starts: notifications were lost; %s", resourcesync.FormatTime(e.Since), resourcesync.FormatTime(e.From), e.Why)
	case Covered:
		s += fmt.Sprintf(": the changes until %s are in the tree already", resourcesync.FormatTime(e.Until))
	case Unsubscribed:
		s += fmt.Sprintf(" from %s at %s", e.Topic, e.Hub)
	case Polling:
		s += ": nothing heard; syncing anyway"
	case NoChannel:
		s += ": the Source advertises no notification hub; syncing every poll interval"
	}
	if e.Err != nil {
		if e.Topic != "" && e.Kind != Subscribed {
			s += ": " + e.Topic
		}
		s += ": " + e.Err.Error()
	}
	return s
}
