package websub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/rsdump/rsdump/internal/atomic"
)

// stateVersion is the format of the state file.
const stateVersion = 1

// state is the state file: the subscriptions and the latest content of
// each topic. It holds the subscribers' secrets, so it is written 0600.
type state struct {
	Version       int          `json:"version"`
	Subscriptions []stateSub   `json:"subscriptions"`
	Topics        []stateTopic `json:"topics"`
}

type stateSub struct {
	Topic        string    `json:"topic"`
	Callback     string    `json:"callback"`
	Secret       string    `json:"secret,omitempty"`
	LeaseSeconds int64     `json:"lease_seconds"`
	Expires      time.Time `json:"expires"`
}

type stateTopic struct {
	Topic       string    `json:"topic"`
	ContentType string    `json:"content_type"`
	Links       []string  `json:"links,omitempty"`
	Body        []byte    `json:"body"`
	Time        time.Time `json:"time"`
}

// load reads the state file, when there is one, leaving out the
// subscriptions whose lease has run out.
func (h *Hub) load() error {
	if h.opts.StateFile == "" {
		return nil
	}
	data, err := os.ReadFile(h.opts.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("%s: %w", h.opts.StateFile, err)
	}
	if st.Version != stateVersion {
		return fmt.Errorf("%s: state version %d, this hub reads %d", h.opts.StateFile, st.Version, stateVersion)
	}
	now := h.opts.Now()
	for _, s := range st.Subscriptions {
		if now.Before(s.Expires) {
			k := key{s.Topic, s.Callback}
			h.subs[k] = &sub{key: k, secret: s.Secret, lease: time.Duration(s.LeaseSeconds) * time.Second, expires: s.Expires}
		}
	}
	for _, t := range st.Topics {
		h.topics[t.Topic] = &content{topic: t.Topic, ctype: t.ContentType, links: t.Links, body: t.Body, time: t.Time}
	}
	return nil
}

// save writes the state file atomically; a failure is reported as a
// StateError event, the hub going on in memory.
func (h *Hub) save() {
	if h.opts.StateFile == "" {
		return
	}
	h.saveMu.Lock()
	defer h.saveMu.Unlock()
	data, err := json.MarshalIndent(h.snapshot(), "", "\t")
	if err == nil {
		err = atomic.WriteFile(h.opts.StateFile, append(data, '\n'), 0o600)
	}
	if err != nil {
		h.emit(Event{Kind: StateError, Err: err})
	}
}

func (h *Hub) snapshot() state {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := state{Version: stateVersion, Subscriptions: []stateSub{}, Topics: []stateTopic{}}
	for _, s := range h.subs {
		st.Subscriptions = append(st.Subscriptions, stateSub{Topic: s.topic, Callback: s.callback, Secret: s.secret,
			LeaseSeconds: int64(s.lease / time.Second), Expires: s.expires})
	}
	for _, c := range h.topics {
		st.Topics = append(st.Topics, stateTopic{Topic: c.topic, ContentType: c.ctype, Links: c.links, Body: c.body, Time: c.time})
	}
	sort.Slice(st.Subscriptions, func(i, j int) bool {
		a, b := st.Subscriptions[i], st.Subscriptions[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Callback < b.Callback
	})
	sort.Slice(st.Topics, func(i, j int) bool { return st.Topics[i].Topic < st.Topics[j].Topic })
	return st
}
