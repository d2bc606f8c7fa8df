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

// enqueue queues c for s, starting its delivery goroutine when idle. A
// queue at its bound loses its oldest waiting content, which the returned
// event reports. It is called with h.mu held.
func (h *Hub) enqueue(s *sub, c *content) (Event, bool) {
	var e Event
	dropped := false
	if len(s.queue) >= maxQueue {
		e = Event{Kind: Dropped, Topic: s.topic, Callback: s.callback, Err: fmt.Errorf("more than %d notifications waiting for this subscriber", maxQueue)}
		s.queue = append(s.queue[:1], s.queue[2:]...)
		dropped = true
	}
	s.queue = append(s.queue, c)
	if !s.busy {
		s.busy = true
		h.spawn(func() { h.run(s) })
	}
	return e, dropped
}

// run delivers s's queue in order, until it is empty, the subscription is
// gone or the hub closes.
func (h *Hub) run(s *sub) {
	for {
		h.mu.Lock()
		if len(s.queue) == 0 || h.subs[s.key] != s || h.ctx.Err() != nil {
			s.queue, s.busy = nil, false
			h.mu.Unlock()
			return
		}
		c := s.queue[0]
		h.mu.Unlock()
		h.deliver(s, c)
		h.mu.Lock()
		if len(s.queue) > 0 {
			s.queue = s.queue[1:]
		}
		h.mu.Unlock()
	}
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
	h.mu.Unlock()
	h.save()
	h.emit(Event{Kind: Expired, Topic: s.topic, Callback: s.callback})
	return "", false
}

// deliver sends c to s, retrying with exponential backoff (httpc's, from
// RetryWait, unjittered) within the bounds of Attempts and RetryTime.
func (h *Hub) deliver(s *sub, c *content) {
	start, backoff := time.Now(), httpc.Backoff{Base: h.opts.RetryWait, Max: h.opts.RetryTime}
	for attempt := 1; ; attempt++ {
		wait := backoff.Wait(attempt-1, 0)
		secret, ok := h.live(s)
		if !ok {
			return
		}
		status, err := h.send(s.key, secret, c)
		ev := Event{Topic: s.topic, Callback: s.callback, Attempt: attempt, Err: err}
		switch {
		case err == nil:
			ev.Kind = Delivered
		case status == http.StatusGone:
			h.remove(s)
			ev.Kind = Gone
		case h.ctx.Err() != nil:
			return
		case attempt >= h.opts.Attempts || time.Since(start)+wait > h.opts.RetryTime:
			ev.Kind = Dropped
		default:
			ev.Kind, ev.Wait = Retrying, wait
		}
		h.emit(ev)
		if ev.Kind != Retrying {
			return
		}
		select {
		case <-time.After(wait):
		case <-h.ctx.Done():
			return
		}
	}
}

func (h *Hub) remove(s *sub) {
	h.mu.Lock()
	if h.subs[s.key] == s {
		delete(h.subs, s.key)
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
	if err := h.acquire(ctx); err != nil {
		return 0, err
	}
	defer h.release()
	resp, err := h.client.Do(req)
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
