package follow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

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
	opts   Options
	source resourcesync.Location
	dir    string
	srv    *http.Server
	sub    *websub.Subscriber
	notes  chan websub.Content
	chans  []*channel
	since  time.Time   // what the tree is up to, after the last sync
	before time.Time   // what it was up to before that sync (at the start, since)
	heard  time.Time   // the end of the last change notification's interval
	missed atomic.Bool // a notification was dropped: the queue was full
}

// channel is one channel Follow subscribes to, and when to renew or
// retry its subscription.
type channel struct {
	replica.Channel
	active bool
	next   time.Time
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
	f := &follower{opts: o, source: source, dir: dir, notes: make(chan websub.Content, maxQueued)}
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
// with none in its Capability List, to the hub its Link header names.
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

// subscribe subscribes to ch, or renews its subscription, and sets when
// to do so again: at four fifths of the lease, or after Retry when it
// failed.
func (f *follower) subscribe(ctx context.Context, ch *channel) {
	s, err := f.sub.Subscribe(ctx, ch.Hub, ch.Topic, f.opts.Lease, f.opts.VerifyWait)
	if err != nil {
		if ctx.Err() == nil {
			f.emit(Event{Kind: SubscribeFailed, Topic: ch.Topic, Hub: ch.Hub, Capability: ch.Capability, Err: err})
		}
		ch.active, ch.next = false, time.Now().Add(f.opts.Retry)
		return
	}
	lease := s.Lease
	if lease <= 0 {
		lease = websub.DefaultMinLease // the hub did not say: renew early
	}
	ch.active, ch.next = true, time.Now().Add(lease*4/5)
	f.emit(Event{Kind: Subscribed, Topic: ch.Topic, Hub: ch.Hub, Capability: ch.Capability, Lease: s.Lease})
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
		case <-renew.C:
			for _, ch := range f.chans {
				if !time.Now().Before(ch.next) {
					f.subscribe(ctx, ch)
				}
			}
		}
		renew.Stop()
	}
}

// untilRenewal is the time to the next renewal or retry.
func (f *follower) untilRenewal() time.Duration {
	d := 24 * time.Hour
	for _, ch := range f.chans {
		d = min(d, max(0, time.Until(ch.next)))
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

// unsubscribeAll ends the subscriptions, each within unsubscribeWait.
func (f *follower) unsubscribeAll() {
	ctx, cancel := context.WithTimeout(context.Background(), unsubscribeWait)
	defer cancel()
	for _, ch := range f.chans {
		if !ch.active {
			continue
		}
		err := f.sub.Unsubscribe(ctx, ch.Hub, ch.Topic, unsubscribeWait)
		f.emit(Event{Kind: Unsubscribed, Topic: ch.Topic, Hub: ch.Hub, Capability: ch.Capability, Err: err})
	}
}
