package follow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/websub"
)

// maxQueued bounds the notifications waiting while a sync runs; past it
// they are dropped, and one sync after the running one catches up.
const maxQueued = 64

// unsubscribeWait bounds the unsubscriptions as Follow stops.
const unsubscribeWait = 5 * time.Second

type follower struct {
	opts    Options
	source  resourcesync.Location
	dir     string
	srv     *http.Server
	sub     *websub.Subscriber
	notes   chan websub.Content
	chans   []*channel
	results chan subscribed // of the subscriptions running in the background
	wg      sync.WaitGroup  // the subscriptions running
	since   time.Time       // what the tree is up to, after the last sync
	before  time.Time       // what it was up to before that sync (at the start, since)
	heard   time.Time       // the end of the last change notification's interval
	missed  atomic.Bool     // a notification was dropped: the queue was full
}

// channel is one channel Follow subscribes to, and when to renew or
// retry its subscription.
type channel struct {
	replica.Channel
	active   bool
	pending  bool // a subscription request is running
	failures int  // in a row
	next     time.Time
}

// subscribed is the outcome of a subscription request.
type subscribed struct {
	ch  *channel
	sub websub.Subscription
	err error
}

func newFollower(source resourcesync.Location, dir string, o Options) (*follower, error) {
	o = o.withDefaults()
	ln := o.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", o.CallbackAddr); err != nil {
			return nil, fmt.Errorf("callback: %w", err)
		}
	}
	if o.CallbackURL == "" {
		o.CallbackURL = "http://" + ln.Addr().String() + "/"
	}
	f := &follower{opts: o, source: source, dir: dir, notes: make(chan websub.Content, maxQueued), results: make(chan subscribed)}
	f.sub = &websub.Subscriber{CallbackURL: o.CallbackURL, Client: o.Client,
		Notify: func(c websub.Content) {
			select {
			case f.notes <- c:
			default:
				f.missed.Store(true)
			}
		},
		Ignored: func(topic string, err error) { f.emit(Event{Kind: Ignored, Topic: topic, Err: err}) },
	}
	f.srv = &http.Server{Handler: f.sub, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	go f.srv.Serve(ln)
	return f, nil
}

// subscribeAll subscribes to every channel the Source advertises, or,
// with none in its Capability List, to the hub its Link header names, in
// the background: the loop takes the outcomes.
func (f *follower) subscribeAll(ctx context.Context, src *replica.Source) {
	chans := src.Channels
	if len(chans) == 0 && src.CapabilityList != "" && resourcesync.IsURL(src.CapabilityList) {
		if hub, topic, err := websub.Discover(ctx, f.opts.Client, src.CapabilityList); err == nil {
			// A hub found by Link header carries either kind.
			chans = []replica.Channel{{Topic: topic, Hub: hub}}
		}
	}
	if len(chans) == 0 {
		f.emit(Event{Kind: NoChannel})
	}
	for _, c := range chans {
		ch := &channel{Channel: c}
		f.chans = append(f.chans, ch)
		f.subscribe(ctx, ch)
	}
}

// subscribe starts a subscription to ch, or a renewal of it, in the
// background: a hub may take VerifyWait to verify it, or never do, and
// polling goes on meanwhile. Its outcome comes back on f.results.
func (f *follower) subscribe(ctx context.Context, ch *channel) {
	if ch.pending {
		return
	}
	ch.pending = true
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		s, err := f.sub.Subscribe(ctx, ch.Hub, ch.Topic, f.opts.Lease, f.opts.VerifyWait)
		select {
		case f.results <- subscribed{ch, s, err}:
		case <-ctx.Done():
		}
	}()
}

// subscribed takes the outcome of a subscription request and sets when
// to subscribe again: at four fifths of the lease, but never sooner
// than MinRenew; after a failure, after Retry doubled with each failure
// in a row, up to MaxRetry.
func (f *follower) subscribed(ctx context.Context, r subscribed) {
	ch := r.ch
	ch.pending = false
	if r.err != nil {
		if ctx.Err() == nil {
			f.emit(Event{Kind: SubscribeFailed, Topic: ch.Topic, Hub: ch.Hub, Capability: ch.Capability, Err: r.err})
		}
		ch.failures++
		wait := httpc.Backoff{Base: f.opts.Retry, Max: f.opts.MaxRetry}.Wait(ch.failures-1, 0)
		ch.active, ch.next = false, time.Now().Add(wait)
		return
	}
	lease := r.sub.Lease
	if lease <= 0 {
		lease = websub.DefaultMinLease // the hub did not say: renew early
	}
	ch.failures = 0
	ch.active, ch.next = true, time.Now().Add(max(lease*4/5, f.opts.MinRenew))
	f.emit(Event{Kind: Subscribed, Topic: ch.Topic, Hub: ch.Hub, Capability: ch.Capability, Lease: r.sub.Lease})
}

// loop waits for notifications, the poll interval and renewals until ctx
// is done.
func (f *follower) loop(ctx context.Context) {
	poll := time.NewTimer(f.opts.Poll)
	defer poll.Stop()
	for {
		renew := time.NewTimer(f.untilRenewal())
		select {
		case <-ctx.Done():
			renew.Stop()
			return
		case c := <-f.notes:
			if f.take(ctx, c) {
				poll.Reset(f.opts.Poll)
			}
		case <-poll.C:
			f.emit(Event{Kind: Polling})
			f.sync(ctx, "poll")
			poll.Reset(f.opts.Poll)
		case r := <-f.results:
			f.subscribed(ctx, r)
		case <-renew.C:
			for _, ch := range f.chans {
				if !ch.pending && !time.Now().Before(ch.next) {
					f.subscribe(ctx, ch)
				}
			}
		}
		renew.Stop()
	}
}

// untilRenewal is the time to the next renewal or retry of a channel
// with no request running.
func (f *follower) untilRenewal() time.Duration {
	d := 24 * time.Hour
	for _, ch := range f.chans {
		if !ch.pending {
			d = min(d, max(0, time.Until(ch.next)))
		}
	}
	return d
}

// take handles c and the notifications queued behind it with one sync,
// when any of them calls for one. It reports whether one was a
// notification.
func (f *follower) take(ctx context.Context, c websub.Content) bool {
	why, heard := f.check(c)
	for more := true; more; {
		select {
		case c := <-f.notes:
			w, h := f.check(c)
			heard = heard || h
			if why == "" {
				why = w
			}
		default:
			more = false
		}
	}
	if f.missed.Swap(false) {
		why = "notifications dropped while a sync ran"
	}
	if why != "" {
		f.sync(ctx, why)
	}
	return heard
}

// check reads a notification and says why it calls for a sync, if it
// does.
func (f *follower) check(c websub.Content) (why string, heard bool) {
	dec, err := resourcesync.NewDecoder(bytes.NewReader(c.Body))
	if err != nil {
		f.emit(Event{Kind: Ignored, Topic: c.Topic, Err: fmt.Errorf("not a ResourceSync notification: %w", err)})
		return "", false
	}
	h := dec.Header()
	if want := f.capability(c.Topic); want != "" && h.MD.Capability != want {
		f.emit(Event{Kind: Ignored, Topic: c.Topic, Err: fmt.Errorf("a %q notification on the %s topic", h.MD.Capability, want)})
		return "", false
	}
	e := Event{Kind: Notified, Topic: c.Topic, Capability: h.MD.Capability, From: h.MD.From, Until: h.MD.Until}
	switch h.MD.Capability {
	case resourcesync.CapFrameworkNotification:
		f.emit(e)
		return "framework notification", true
	case resourcesync.CapChangeNotification:
	default:
		f.emit(Event{Kind: Ignored, Topic: c.Topic, Err: errors.New("not a framework or change notification: capability " + h.MD.Capability)})
		return "", false
	}
	f.emit(e)
	last := f.heard
	if h.MD.Until.After(f.heard) {
		f.heard = h.MD.Until
	}
	switch {
	case !h.MD.Until.IsZero() && !h.MD.Until.After(f.since):
		// Pulled already, most often on the framework notification of the
		// same run, which comes first: the interval still shows the
		// notifications lost before it, when it starts after both what the
		// tree was up to before that pull and the last interval heard.
		if known := later(f.before, last); h.MD.From.After(known) {
			f.emit(Event{Kind: Gap, Topic: c.Topic, From: h.MD.From, Until: h.MD.Until, Since: known, Why: gapCovered})
		}
		f.emit(Event{Kind: Covered, Topic: c.Topic, Until: h.MD.Until})
		return "", true
	case h.MD.From.After(f.since):
		f.emit(Event{Kind: Gap, Topic: c.Topic, From: h.MD.From, Until: h.MD.Until, Since: f.since, Why: gapPull})
		return "change notification after a gap", true
	}
	return "change notification", true
}

// capability is what the notifications of topic must be: the
// capability its Capability List advertised, or "" when it was found by
// a Link header.
func (f *follower) capability(topic string) string {
	for _, ch := range f.chans {
		if ch.Topic == topic {
			return ch.Capability
		}
	}
	return ""
}

// What a Gap leads to: its Why.
const (
	gapPull    = "pulling the Source's changes"
	gapCovered = "the tree has their changes already"
)

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// sync runs one sync and records what the tree is up to.
func (f *follower) sync(ctx context.Context, why string) {
	res, err := replica.Sync(ctx, f.source, f.dir, f.opts.Sync)
	if err != nil {
		if ctx.Err() == nil {
			f.emit(Event{Kind: SyncFailed, Why: why, Err: err})
		}
		return
	}
	f.synced(res, why)
}

func (f *follower) synced(res *replica.Result, why string) {
	f.before, f.since = f.since, res.Until
	if why == startWhy {
		f.before = res.Until
	}
	f.emit(Event{Kind: Synced, Why: why, Result: res})
}

// unsubscribeAll ends the subscriptions, each within unsubscribeWait:
// those active, and those whose request was running (a hub may have
// taken it).
func (f *follower) unsubscribeAll() {
	ctx, cancel := context.WithTimeout(context.Background(), unsubscribeWait)
	defer cancel()
	for _, ch := range f.chans {
		if !ch.active && !ch.pending {
			continue
		}
		err := f.sub.Unsubscribe(ctx, ch.Hub, ch.Topic, unsubscribeWait)
		f.emit(Event{Kind: Unsubscribed, Topic: ch.Topic, Hub: ch.Hub, Capability: ch.Capability, Err: err})
	}
}
