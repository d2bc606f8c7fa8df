package websub

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/metalink/httpheader"
)

// pool is the delivery workers and the subscribers waiting for one, in
// two lanes taken in turn (first in, first out): ready, and slow, those
// whose last try failed, which hold at most a quarter of the workers.
// A subscriber waits in one lane at most once, and a worker makes one
// try of its first content before it goes to the back of its lane: no
// subscriber holds a worker while others wait, nor while it waits to
// retry (a timer puts it back). It is guarded by Hub.mu.
type pool struct {
	ready, slow   []*sub
	workers, busy int // workers running; of them, taking a slow one
}

// enqueue queues c for s, and puts s in line when it was idle. A queue
// at its bound loses its oldest waiting content, and content past the
// bytes all queues may hold is not queued: the returned event reports
// either. It is called with h.mu held.
func (h *Hub) enqueue(s *sub, c *content) (Event, bool) {
	if c.queued == 0 && h.queuedBytes+int64(len(c.body)) > maxQueued {
		return Event{Kind: Dropped, Topic: s.topic, Callback: s.callback, Err: fmt.Errorf("the hub holds more than %d bytes of content waiting for delivery", maxQueued)}, true
	}
	var e Event
	dropped := false
	if len(s.queue) >= maxQueue {
		e = Event{Kind: Dropped, Topic: s.topic, Callback: s.callback, Err: fmt.Errorf("more than %d notifications waiting for this subscriber", maxQueue)}
		h.unqueue(s.queue[1])
		s.queue = append(s.queue[:1], s.queue[2:]...)
		dropped = true
	}
	if c.queued == 0 {
		h.queuedBytes += int64(len(c.body))
	}
	c.queued++
	s.queue = append(s.queue, c)
	if !s.busy {
		s.busy = true
		h.line(s)
	}
	return e, dropped
}

// unqueue is c leaving a queue; h.mu is held.
func (h *Hub) unqueue(c *content) {
	if c.queued--; c.queued == 0 {
		h.queuedBytes -= int64(len(c.body))
	}
}

// line puts s at the back of its lane and starts a worker if one may
// take it; h.mu is held.
func (h *Hub) line(s *sub) {
	if s.failing {
		h.pool.slow = append(h.pool.slow, s)
	} else {
		h.pool.ready = append(h.pool.ready, s)
	}
	if h.pool.workers < h.opts.Deliveries && h.waiting() {
		h.pool.workers++
		h.spawn(h.work)
	}
}

// slowWorkers is the most workers the slow lane may hold.
func (h *Hub) slowWorkers() int { return max(1, h.opts.Deliveries/4) }

// waiting says whether a subscriber waits that a free worker may take.
func (h *Hub) waiting() bool {
	return len(h.pool.ready) > 0 || len(h.pool.slow) > 0 && h.pool.busy < h.slowWorkers()
}

// take is the next subscriber a worker tries, and whether it is from
// the slow lane; nil when none may be taken. h.mu is held.
func (h *Hub) take() (*sub, bool) {
	switch {
	case len(h.pool.ready) > 0:
		s := h.pool.ready[0]
		h.pool.ready = h.pool.ready[1:]
		return s, false
	case len(h.pool.slow) > 0 && h.pool.busy < h.slowWorkers():
		s := h.pool.slow[0]
		h.pool.slow = h.pool.slow[1:]
		h.pool.busy++
		return s, true
	}
	return nil, false
}

// work is a worker: it tries subscribers in turn until none waits that
// it may take.
func (h *Hub) work() {
	for {
		h.mu.Lock()
		s, slow := h.take()
		if s == nil {
			h.pool.workers--
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		h.try(s)
		if slow {
			h.mu.Lock()
			h.pool.busy--
			h.mu.Unlock()
		}
	}
}

// try makes one try of the first content queued for s, then puts s back
// in line: at once when more content waits, after the backoff's wait
// when this one is to be tried again.
func (h *Hub) try(s *sub) {
	h.mu.Lock()
	if len(s.queue) == 0 || h.subs[s.key] != s || h.ctx.Err() != nil {
		h.idle(s)
		h.mu.Unlock()
		return
	}
	c := s.queue[0]
	if s.attempt == 0 {
		s.first = time.Now()
	}
	s.attempt++
	attempt, first := s.attempt, s.first
	h.mu.Unlock()
	secret, ok := h.live(s)
	if !ok {
		h.mu.Lock()
		h.idle(s)
		h.mu.Unlock()
		return
	}
	status, err := h.send(s.key, secret, c)
	wait := httpc.Backoff{Base: h.opts.RetryWait, Max: h.opts.RetryTime}.Wait(attempt-1, 0) // unjittered
	ev := Event{Topic: s.topic, Callback: s.callback, Attempt: attempt, Err: err}
	switch {
	case err == nil:
		ev.Kind = Delivered
	case status == http.StatusGone:
		h.remove(s)
		ev.Kind = Gone
	case h.ctx.Err() != nil:
		h.mu.Lock()
		h.idle(s)
		h.mu.Unlock()
		return
	case attempt >= h.opts.Attempts || time.Since(first)+wait > h.opts.RetryTime:
		ev.Kind = Dropped
	default:
		ev.Kind, ev.Wait = Retrying, wait
	}
	h.emit(ev)
	h.mu.Lock()
	defer h.mu.Unlock()
	s.failing = err != nil
	switch {
	case ev.Kind == Retrying:
		time.AfterFunc(wait, func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.line(s)
		})
	case ev.Kind == Gone:
		h.idle(s)
	default:
		h.unqueue(c)
		s.queue, s.attempt = s.queue[1:], 0
		if len(s.queue) == 0 {
			s.busy = false
		} else {
			h.line(s)
		}
	}
}

// idle empties s's queue and marks it out of line; h.mu is held.
func (h *Hub) idle(s *sub) {
	for _, c := range s.queue {
		h.unqueue(c)
	}
	s.queue, s.busy, s.attempt = nil, false, 0
}

// live reports whether s is still subscribed with a running lease, and
// its secret; an expired s is removed.
func (h *Hub) live(s *sub) (string, bool) {
	now := h.opts.Now()
	h.mu.Lock()
	if h.subs[s.key] != s {
		h.mu.Unlock()
		return "", false
	}
	if now.Before(s.expires) {
		defer h.mu.Unlock()
		return s.secret, true
	}
	delete(h.subs, s.key)
	h.record(stateRecord{Unsub: &stateKey{s.topic, s.callback}})
	h.mu.Unlock()
	h.save()
	h.emit(Event{Kind: Expired, Topic: s.topic, Callback: s.callback})
	return "", false
}

func (h *Hub) remove(s *sub) {
	h.mu.Lock()
	if h.subs[s.key] == s {
		delete(h.subs, s.key)
		h.record(stateRecord{Unsub: &stateKey{s.topic, s.callback}})
	}
	h.mu.Unlock()
	h.save()
}

// send POSTs c to the callback of k once (WebSub §7): the body as it
// came, the topic's Content-Type, Link rel="hub" and rel="self", and the
// signature when there is a secret. It returns the answer's status.
func (h *Hub) send(k key, secret string, c *content) (int, error) {
	ctx, cancel := context.WithTimeout(h.ctx, h.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, k.callback, bytes.NewReader(c.body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", c.ctype)
	req.Header.Add("Link", httpheader.Link{URL: h.opts.URL, Rel: []string{"hub"}}.String())
	req.Header.Add("Link", httpheader.Link{URL: k.topic, Rel: []string{"self"}}.String())
	for _, l := range c.links {
		req.Header.Add("Link", l)
	}
	if secret != "" {
		req.Header.Set("X-Hub-Signature", Signature(secret, c.body))
	}
	resp, err := h.cbClient.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, discardOnReply))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("%s %w: HTTP %s", redacted(k.callback), ErrStatus, resp.Status)
	}
	return resp.StatusCode, nil
}

func redacted(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return s
}

// Signature is the X-Hub-Signature value the hub sends with content for a
// subscriber that gave secret: "sha256=" and the hex HMAC-SHA256 of the
// body, keyed with the secret (WebSub §8).
func Signature(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// CheckSignature reports whether header, an X-Hub-Signature value, is a
// valid signature of body with secret, by any of WebSub's methods (sha1,
// sha256, sha384, sha512). A subscriber must ignore content whose
// signature does not check.
func CheckSignature(secret, header string, body []byte) bool {
	method, sig, ok := strings.Cut(strings.TrimSpace(header), "=")
	want, err := hex.DecodeString(sig)
	if !ok || err != nil {
		return false
	}
	var h func() hash.Hash
	switch strings.ToLower(method) {
	case "sha1":
		h = sha1.New
	case "sha256":
		h = sha256.New
	case "sha384":
		h = sha512.New384
	case "sha512":
		h = sha512.New
	default:
		return false
	}
	m := hmac.New(h, []byte(secret))
	m.Write(body)
	return hmac.Equal(m.Sum(nil), want)
}
