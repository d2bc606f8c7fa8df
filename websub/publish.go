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
	n := h.distribute(c, true)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "accepted: %s goes to %s\n", topic, finding.Plural(n, "subscriber"))
}

// publishForm is hub.mode=publish: each topic named by hub.topic or
// hub.url (the older name) is fetched, and what it answers distributed.
func (h *Hub) publishForm(w http.ResponseWriter, form url.Values) {
	var topics []string
	for _, name := range []string{"hub.topic", "hub.url"} {
		for _, s := range form[name] {
			t, status, err := h.topic(name, s)
			if err != nil {
				http.Error(w, err.Error(), status)
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
		if !h.later(func() { h.fetch(t) }) {
			busy(w)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "accepted: the hub will fetch %s\n", strings.Join(topics, " "))
}

// fetch GETs a topic and distributes its content.
func (h *Hub) fetch(topic string) {
	c, err := h.get(topic)
	if err != nil {
		h.emit(Event{Kind: FetchFailed, Topic: topic, Err: err})
		return
	}
	h.distribute(c, false)
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

// distribute queues c for each subscriber of its topic whose lease runs,
// and returns how many. It keeps c as the topic's latest content when a
// publisher posted it (keep), or when it goes to someone: what anyone may
// make the hub fetch is not kept for nobody.
func (h *Hub) distribute(c *content, keep bool) int {
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
			events = append(events, Event{Kind: Expired, Topic: k.topic, Callback: k.callback})
			continue
		}
		if e, dropped := h.enqueue(s, c); dropped {
			events = append(events, e)
		}
		n++
	}
	if keep || n > 0 {
		h.topics[c.topic] = c
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
