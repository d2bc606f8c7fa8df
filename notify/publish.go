package notify

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/metalink/httpheader"
	"github.com/rsdump/rsdump/resourcesync"
)

// Publisher submits notifications to a hub.
type Publisher struct {
	// Client posts the notifications, with its retries (a client
	// httpc.New built: its Options.Retry; any other: DoRetry's defaults).
	// Nil is a client that also retries a refused connection: a hub
	// restarting is back within the retries' minute.
	Client *http.Client
	// Open reads the documents a run wrote, for its change notifications.
	// Nil is resourcesync.Open.
	Open resourcesync.OpenFunc
	// Events, when set, is told of each notification: a Sent, or a
	// finding.Finding (a warning) for one that could not be delivered.
	Events func(finding.Event)
}

// Sent is a notification the hub accepted.
type Sent struct {
	Hub, Topic  string
	Capability  string // framework-notification or change-notification
	Entries     int
	From, Until time.Time // a change notification's interval
}

// Notification is one notification to submit.
type Notification struct {
	Hub, Topic     string
	CapabilityList string // linked rel="resourcesync"
	Capability     string
	Body           []byte
	Entries        int
	From, Until    time.Time
}

// Publish submits the notifications of a pack run to the hub of
// res.Channels: a framework notification for the documents it created or
// changed and, when the channels have a change topic, the change
// notifications of a --changes run. It returns how many the hub did not
// accept; each is reported to Events, none stops the others. Nothing is
// sent when the channels have no hub.
func (p *Publisher) Publish(ctx context.Context, res *layout.Published) int {
	ch := res.Channels
	if ch.Hub == "" {
		return 0
	}
	failed := 0
	submit := func(n Notification) {
		if err := p.Submit(ctx, n); err != nil {
			failed++
		}
	}
	body, err := Framework(res)
	switch {
	case err != nil:
		p.warn(ch.Framework, err)
		failed++
	case body != nil:
		submit(Notification{Hub: ch.Hub, Topic: ch.Framework, CapabilityList: res.CapabilityList,
			Capability: resourcesync.CapFrameworkNotification, Body: body, Entries: countNonIndex(res.Documents)})
	}
	if ch.Change == "" {
		return failed
	}
	err = Changes(ctx, p.Open, res, func(from, until time.Time, body []byte) error {
		submit(Notification{Hub: ch.Hub, Topic: ch.Change, CapabilityList: res.CapabilityList,
			Capability: resourcesync.CapChangeNotification, Body: body, From: from, Until: until,
			Entries: bytes.Count(body, []byte("<url>"))})
		return nil
	})
	if err != nil {
		p.warn(ch.Change, err)
		failed++
	}
	return failed
}

func countNonIndex(docs []layout.Document) int {
	n := 0
	for _, d := range docs {
		if !d.IsIndex {
			n++
		}
	}
	return n
}

// Submit posts one notification to its hub (§4.1 of either
// specification), retried while the failure may pass. An error is also
// reported to Events.
func (p *Publisher) Submit(ctx context.Context, n Notification) error {
	err := p.post(ctx, n)
	if err != nil {
		p.warn(n.Topic, err)
		return err
	}
	finding.Send(p.Events, Sent{Hub: n.Hub, Topic: n.Topic, Capability: n.Capability, Entries: n.Entries, From: n.From, Until: n.Until})
	return nil
}

func (p *Publisher) post(ctx context.Context, n Notification) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.Hub, bytes.NewReader(n.Body))
	if err != nil {
		return fmt.Errorf("hub %s: %w", n.Hub, err)
	}
	req.Header.Set("Content-Type", "application/xml")
	links := []httpheader.Link{{URL: n.Topic, Rel: []string{"self"}}, {URL: n.Hub, Rel: []string{"hub"}}}
	if n.CapabilityList != "" {
		links = append(links, httpheader.Link{URL: n.CapabilityList, Rel: []string{"resourcesync"}})
	}
	for _, l := range links {
		req.Header.Add("Link", l.String())
	}
	c := p.Client
	if c == nil {
		c = defaultClient()
	}
	_, body, err := httpc.DoRetry(c, req, 64<<10)
	if err != nil {
		return fmt.Errorf("notifying hub %s of %s: %w", n.Hub, n.Topic, err)
	}
	io.Copy(io.Discard, body)
	return body.Close()
}

// warn reports a notification that was not delivered.
func (p *Publisher) warn(topic string, err error) {
	finding.Send(p.Events, finding.Finding{Severity: finding.Warning, Code: "notification-failed", URI: topic, Msg: err.Error(), Err: err})
}

// defaultClient is the Publisher's client without Client.
var defaultClient = sync.OnceValue(func() *http.Client {
	return httpc.New(httpc.Options{Retry: httpc.Retry{Refused: true}})
})
