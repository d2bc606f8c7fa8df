package websub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/metalink/httpheader"
)

// notification takes the content of a topic posted by its Source, the
// ResourceSync way (Framework Notification §4.1): the body is the
// notification, its Content-Type the topic's, its topic the Link
// rel="self"; a Link rel="hub" must name this hub. Other links
// (rel="resourcesync") are passed on to subscribers. The answer is 202
// Accepted: delivery goes on in the background.
func (h *Hub) notification(w http.ResponseWriter, r *http.Request) {
	if err := h.opts.AllowPublisher(r); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	c := &content{ctype: r.Header.Get("Content-Type")}
	for _, l := range httpheader.ParseLinks(r.Header.Values("Link"), h.opts.URL) {
		switch {
		case l.Has("self"):
			c.topic = l.URL
		case l.Has("hub"):
			if l.URL != h.opts.URL {
				badRequest(w, fmt.Sprintf("the notification's Link rel=\"hub\" names %s, not this hub (%s)", l.URL, h.opts.URL))
				return
			}
		default:
			c.links = append(c.links, l.String())
		}
	}
	if c.topic == "" {
		badRequest(w, "POST either a form with hub.mode, or a notification with a Link rel=\"self\" naming its topic")
		return
	}
	if c.ctype == "" {
		badRequest(w, "the notification has no Content-Type")
		return
	}
	topic, status, err := h.topic("the notification's Link rel=\"self\"", c.topic)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	c.topic = topic
	c.body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxContent))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, fmt.Sprintf("the notification is larger than %d bytes", h.opts.MaxContent), http.StatusRequestEntityTooLarge)
		return
	case err != nil:
		badRequest(w, "reading the notification: "+err.Error())
		return
	case len(c.body) == 0:
		badRequest(w, "the notification is empty")
		return
	}
	n := h.distribute(c, keepAlways)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "accepted: %s goes to %s\n", topic, finding.Plural(n, "subscriber"))
}

// publishForm is hub.mode=publish: each topic named by hub.topic or
// hub.url (the older name) is fetched, and what it answers distributed.
// A publisher (AllowPublisher) may name any topic AllowTopic takes, and
// what is fetched for it is kept as the topic's latest; anyone else may
// name only the hub's own topics, and what is fetched is delivered,
// never kept: no one can make the hub fetch another site, or hold
// content of their choosing.
func (h *Hub) publishForm(w http.ResponseWriter, r *http.Request) {
	publisher := h.opts.AllowPublisher(r) == nil
	var topics []string
	for _, name := range []string{"hub.topic", "hub.url"} {
		for _, s := range r.PostForm[name] {
			t, status, err := h.topic(name, s)
			if err != nil {
				http.Error(w, err.Error(), status)
				return
			}
			if !publisher && !h.ownTopic(t) {
				http.Error(w, fmt.Sprintf("topic %s: only a publisher may ask this hub to fetch a topic on another host than %s", t, h.url.Host), http.StatusForbidden)
				return
			}
			topics = append(topics, t)
		}
	}
	if len(topics) == 0 {
		badRequest(w, "hub.mode=publish needs hub.topic (or hub.url)")
		return
	}
	for _, t := range topics {
		if !h.later(func() { h.fetch(t, publisher) }) {
			busy(w)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "accepted: the hub will fetch %s\n", strings.Join(topics, " "))
}

// fetch GETs a topic and distributes its content, which may be kept as
// the topic's latest when a publisher asked for it.
func (h *Hub) fetch(topic string, publisher bool) {
	c, err := h.get(topic)
	if err != nil {
		h.emit(Event{Kind: FetchFailed, Topic: topic, Err: err})
		return
	}
	if publisher {
		h.distribute(c, keepDelivered)
	} else {
		h.distribute(c, keepNone)
	}
}

func (h *Hub) get(topic string) (*content, error) {
	ctx, cancel := context.WithTimeout(h.ctx, h.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, topic, nil)
	if err != nil {
		return nil, err
	}
	if err := h.acquire(ctx); err != nil {
		return nil, err
	}
	defer h.release()
	resp, body, err := httpc.DoResponse(h.client, req, h.opts.MaxContent)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	c := &content{topic: topic, ctype: resp.Header.Get("Content-Type")}
	if c.body, err = io.ReadAll(body); err != nil {
		return nil, err
	}
	if c.ctype == "" {
		c.ctype = http.DetectContentType(c.body)
	}
	return c, nil
}

// What distribute keeps of content as its topic's latest.
type keeping int

const (
	keepNone      keeping = iota // fetched for someone who is not a publisher
	keepDelivered                // fetched for a publisher: kept when it goes to someone
	keepAlways                   // posted by a publisher
)

// distribute queues c for each subscriber of its topic whose lease runs,
// and returns how many. It keeps c as the topic's latest content as
// keepAs says: what the hub fetched is not kept for nobody, nor ever for
// one who is not a publisher.
func (h *Hub) distribute(c *content, keepAs keeping) int {
	c.time = h.opts.Now()
	var events []Event
	n := 0
	h.mu.Lock()
	for k, s := range h.subs {
		if k.topic != c.topic {
			continue
		}
		if !c.time.Before(s.expires) {
			delete(h.subs, k)
			h.record(stateRecord{Unsub: &stateKey{k.topic, k.callback}})
			events = append(events, Event{Kind: Expired, Topic: k.topic, Callback: k.callback})
			continue
		}
		if e, dropped := h.enqueue(s, c); dropped {
			events = append(events, e)
		}
		n++
	}
	if keepAs == keepAlways || keepAs == keepDelivered && n > 0 {
		h.keep(c)
		h.record(topicRecord(c))
	}
	h.mu.Unlock()
	h.save()
	for _, e := range events {
		h.emit(e)
	}
	h.emit(Event{Kind: Published, Topic: c.topic, Subscribers: n})
	return n
}

// serveTopic answers a GET of a topic URL on the hub's host with the
// topic's latest content, or, for a topic under the hub's URL that has
// had none, an empty 200 (Framework Notification §4.1: Content-Length 0).
// Both carry the Link rel="hub" and rel="self" subscribers discover the
// hub by.
func (h *Hub) serveTopic(w http.ResponseWriter, r *http.Request) {
	topic := (&url.URL{Scheme: h.url.Scheme, Host: h.url.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}).String()
	h.mu.Lock()
	c := h.topics[topic]
	h.mu.Unlock()
	if c == nil {
		under := strings.HasPrefix(r.URL.Path, strings.TrimSuffix(h.url.Path, "/")+"/")
		if _, _, err := h.topic("topic", topic); err != nil || !under {
			http.NotFound(w, r)
			return
		}
		c = &content{topic: topic, ctype: "application/xml"}
	}
	hdr := w.Header()
	hdr.Set("Content-Type", c.ctype)
	hdr.Add("Link", httpheader.Link{URL: h.opts.URL, Rel: []string{"hub"}}.String())
	hdr.Add("Link", httpheader.Link{URL: topic, Rel: []string{"self"}}.String())
	hdr.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", c.time, bytes.NewReader(c.body))
}

// keep makes c its topic's latest content, and lets go of the topics
// updated longest ago while they hold more than MaxKept bytes (c is
// kept whatever its size, up to MaxContent). h.mu is held.
func (h *Hub) keep(c *content) {
	h.forget(c.topic)
	h.topics[c.topic] = c
	h.kept += keptSize(c)
	for h.kept > h.opts.MaxKept && len(h.topics) > 1 {
		var oldest *content
		for _, t := range h.topics {
			if t != c && (oldest == nil || t.time.Before(oldest.time)) {
				oldest = t
			}
		}
		h.forget(oldest.topic)
		h.record(stateRecord{Drop: oldest.topic})
	}
}

// forget lets go of topic's content; h.mu is held.
func (h *Hub) forget(topic string) {
	if old := h.topics[topic]; old != nil {
		h.kept -= keptSize(old)
		delete(h.topics, topic)
	}
}

// keptSize is what a topic's content counts against MaxKept: its body
// and, so that many empty ones count too, a kilobyte.
func keptSize(c *content) int64 { return int64(len(c.body)) + 1<<10 }
