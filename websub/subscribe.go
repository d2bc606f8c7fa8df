package websub

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// request is a subscription or unsubscription waiting for verification.
type request struct {
	key
	mode   string
	cb     *url.URL
	lease  time.Duration
	secret string
	seq    uint64
}

// post answers a POST to the hub URL: a form (subscribe, unsubscribe,
// publish) or a notification.
func (h *Hub) post(w http.ResponseWriter, r *http.Request) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/x-www-form-urlencoded" {
		h.notification(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		badRequest(w, "reading the form: "+err.Error())
		return
	}
	switch mode := r.PostForm.Get("hub.mode"); mode {
	case "subscribe", "unsubscribe":
		h.subscribe(w, r.PostForm, mode)
	case "publish":
		h.publishForm(w, r)
	case "":
		badRequest(w, "hub.mode is missing")
	default:
		badRequest(w, fmt.Sprintf("hub.mode %q is none of subscribe, unsubscribe and publish", mode))
	}
}

func badRequest(w http.ResponseWriter, why string) {
	http.Error(w, why, http.StatusBadRequest)
}

// subscribe checks a (un)subscription request, answers 202 and verifies
// the subscriber's intent in the background. Parameters the hub does not
// know are ignored (WebSub §5.1; websub.rocks 102).
func (h *Hub) subscribe(w http.ResponseWriter, form url.Values, mode string) {
	req, status, err := h.parseRequest(form, mode)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	h.mu.Lock()
	h.seq++
	req.seq = h.seq
	h.mu.Unlock()
	if !h.later(func() { h.verify(req) }) {
		busy(w)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "accepted: the hub will now ask %s to confirm the %s\n", req.callback, mode)
}

func (h *Hub) parseRequest(form url.Values, mode string) (*request, int, error) {
	cb, err := httpURL("hub.callback", form.Get("hub.callback"))
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	topic, status, err := h.topic("hub.topic", form.Get("hub.topic"))
	if err != nil {
		return nil, status, err
	}
	req := &request{key: key{topic, cb.String()}, mode: mode, cb: cb, lease: h.opts.Lease}
	if mode == "unsubscribe" {
		return req, 0, nil
	}
	if s := form.Get("hub.lease_seconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return nil, http.StatusBadRequest, fmt.Errorf("hub.lease_seconds %q is not a positive number of seconds", s)
		}
		req.lease = h.opts.MaxLease
		if n < int64(h.opts.MaxLease/time.Second) {
			req.lease = min(max(time.Duration(n)*time.Second, h.opts.MinLease), h.opts.MaxLease)
		}
	}
	req.secret = form.Get("hub.secret")
	if len(req.secret) > MaxSecret {
		return nil, http.StatusBadRequest, fmt.Errorf("hub.secret is %d bytes; it must be less than 200", len(req.secret))
	}
	return req, 0, nil
}

// topic checks a topic URL given as the parameter name, and normalizes it.
func (h *Hub) topic(name, s string) (string, int, error) {
	u, err := httpURL(name, s)
	if err != nil {
		return "", http.StatusBadRequest, err
	}
	t := u.String()
	if h.opts.AllowTopic != nil {
		if err := h.opts.AllowTopic(t); err != nil {
			return "", http.StatusForbidden, fmt.Errorf("topic %s: %w", t, err)
		}
	}
	return t, 0, nil
}

// verify asks the callback to confirm req, and applies it when it does
// and no later request for the same subscription was applied first. A
// new subscription is checked against MaxSubscriptions before the
// challenge (to spare it) and again as it is added, under the same lock,
// so that requests arriving together cannot pass the bound.
func (h *Hub) verify(req *request) {
	if req.mode == "subscribe" {
		h.mu.Lock()
		full := h.full(req.key)
		h.mu.Unlock()
		if full {
			h.denyFull(req)
			return
		}
	}
	err := h.challenge(req)
	if err != nil {
		h.emit(Event{Kind: Refused, Topic: req.topic, Callback: req.callback, Err: err})
		return
	}
	now := h.opts.Now()
	h.mu.Lock()
	switch {
	case req.seq < h.applied[req.key]:
		h.mu.Unlock()
		h.emit(Event{Kind: Refused, Topic: req.topic, Callback: req.callback, Err: ErrSuperseded})
		return
	case req.mode == "subscribe" && h.full(req.key):
		h.mu.Unlock()
		h.denyFull(req)
		return
	}
	h.applied[req.key] = req.seq
	kind := Unsubscribed
	if req.mode == "subscribe" {
		kind = Subscribed
		s := h.subs[req.key]
		if s == nil {
			s = &sub{key: req.key}
			h.subs[req.key] = s
		}
		s.secret, s.lease, s.expires = req.secret, req.lease, now.Add(req.lease)
		h.record(subRecord(s))
	} else {
		delete(h.subs, req.key)
		h.record(stateRecord{Unsub: &stateKey{req.topic, req.callback}})
	}
	h.mu.Unlock()
	h.save()
	h.emit(Event{Kind: kind, Topic: req.topic, Callback: req.callback, Lease: req.lease})
}

// full says whether a new subscription k would pass MaxSubscriptions;
// renewing one never does. h.mu is held.
func (h *Hub) full(k key) bool {
	_, renewal := h.subs[k]
	return !renewal && len(h.subs) >= h.opts.MaxSubscriptions
}

func (h *Hub) denyFull(req *request) {
	h.deny(req, fmt.Sprintf("the hub has reached its limit of %d subscriptions", h.opts.MaxSubscriptions))
}

// deny tells the subscriber its accepted request was denied after all
// (WebSub §5.2: a GET of the callback with hub.mode=denied, hub.topic and
// hub.reason); its answer does not matter.
func (h *Hub) deny(req *request, reason string) {
	h.emit(Event{Kind: Denied, Topic: req.topic, Callback: req.callback, Err: errors.New(reason)})
	q := url.Values{"hub.mode": {"denied"}, "hub.topic": {req.topic}, "hub.reason": {reason}}
	ctx, cancel := context.WithTimeout(h.ctx, h.opts.Timeout)
	defer cancel()
	if resp, err := h.callback(ctx, req.cb, q); err == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxReply))
		resp.Body.Close()
	}
}

// callback GETs the callback cb with the hub's parameters q appended to
// its own query, within the hub's bound on requests at once.
func (h *Hub) callback(ctx context.Context, cb *url.URL, q url.Values) (*http.Response, error) {
	u := *cb
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += q.Encode()
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if err := h.acquire(ctx); err != nil {
		return nil, err
	}
	defer h.release()
	return h.cbClient.Do(hr)
}

// challenge is the verification of intent (WebSub §5.3): a GET of the
// callback, its own query kept and the hub's parameters appended, that
// must answer 2xx with hub.challenge as its body, exactly. A redirect is
// not followed: it is an answer other than 2xx.
func (h *Hub) challenge(req *request) error {
	token := rand.Text()
	q := url.Values{"hub.mode": {req.mode}, "hub.topic": {req.topic}, "hub.challenge": {token}}
	if req.mode == "subscribe" {
		q.Set("hub.lease_seconds", strconv.FormatInt(int64(req.lease/time.Second), 10))
	}
	ctx, cancel := context.WithTimeout(h.ctx, h.opts.Timeout)
	defer cancel()
	resp, err := h.callback(ctx, req.cb, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return fmt.Errorf("%s %w: HTTP %s", req.callback, ErrStatus, resp.Status)
	case err != nil:
		return fmt.Errorf("%s: reading the answer: %w", req.callback, err)
	case string(body) != token:
		return fmt.Errorf("%s %w", req.callback, ErrChallenge)
	}
	return nil
}
