package websub

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/rsdump/rsdump/internal/appendlog"
	"github.com/rsdump/rsdump/internal/atomic"
)

// stateVersion is the format of the state file: an append log of JSON
// lines, a header line ({"version":2}) and then a record a line, each a
// change, in the order the hub made them. Version 1 was one JSON object
// rewritten whole on every change; a hub reads it and writes it again
// as a log.
const stateVersion = 2

// stateRecord is one line of the state file: the header, a subscription
// made or renewed, one ended, a topic's latest content, or a topic no
// longer kept. It holds the subscribers' secrets, so the file is 0600.
type stateRecord struct {
	Version int         `json:"version,omitempty"`
	Sub     *stateSub   `json:"sub,omitempty"`
	Unsub   *stateKey   `json:"unsub,omitempty"`
	Topic   *stateTopic `json:"topic,omitempty"`
	Drop    string      `json:"drop,omitempty"`
}

type stateKey struct {
	Topic    string `json:"topic"`
	Callback string `json:"callback"`
}

type stateSub struct {
	stateKey
	// Secret is the bytes the subscriber gave, in base64: a secret need
	// not be UTF-8, which a JSON string would not keep.
	Secret       []byte    `json:"secret,omitempty"`
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

// stateV1 is the state file of version 1.
type stateV1 struct {
	Version       int `json:"version"`
	Subscriptions []struct {
		Topic        string    `json:"topic"`
		Callback     string    `json:"callback"`
		Secret       string    `json:"secret,omitempty"`
		LeaseSeconds int64     `json:"lease_seconds"`
		Expires      time.Time `json:"expires"`
	} `json:"subscriptions"`
	Topics []stateTopic `json:"topics"`
}

// stateLog is what the hub has still to write of its state: the
// records of the changes since the last write, in order (appended under
// Hub.mu, as each change is made), and when the file is due to be
// written whole again.
type stateLog struct {
	pending   []stateRecord
	size      int64 // the file's length
	compactAt int64 // the length past which it is written whole again
	whole     bool  // write it whole next: it was of version 1, or an append failed
}

// minCompact is the least length at which the state file is compacted.
const minCompact = 1 << 20

func subRecord(s *sub) stateRecord {
	return stateRecord{Sub: &stateSub{stateKey: stateKey{s.topic, s.callback}, Secret: []byte(s.secret),
		LeaseSeconds: int64(s.lease / time.Second), Expires: s.expires}}
}

func topicRecord(c *content) stateRecord {
	return stateRecord{Topic: &stateTopic{Topic: c.topic, ContentType: c.ctype, Links: c.links, Body: c.body, Time: c.time}}
}

// record notes a change for the state file; h.mu is held.
func (h *Hub) record(r stateRecord) {
	if h.opts.StateFile != "" {
		h.log.pending = append(h.log.pending, r)
	}
}

// load reads the state file, when there is one, leaving out the
// subscriptions whose lease has run out.
func (h *Hub) load() error {
	if h.opts.StateFile == "" {
		return nil
	}
	data, err := os.ReadFile(h.opts.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		h.log.whole = true // its header first
		return nil
	}
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		h.log.whole = true
	}
	if err := h.apply(data); err != nil {
		return fmt.Errorf("%s: %w", h.opts.StateFile, err)
	}
	now := h.opts.Now()
	for k, s := range h.subs {
		if !now.Before(s.expires) {
			delete(h.subs, k)
		}
	}
	h.log.size = int64(len(data))
	h.log.compactAt = max(2*h.log.size, minCompact)
	return nil
}

// apply takes the state file's records, of either version.
func (h *Hub) apply(data []byte) error {
	var v1 stateV1
	if json.Unmarshal(data, &v1) == nil && v1.Version == 1 {
		for _, s := range v1.Subscriptions {
			h.applyRecord(stateRecord{Sub: &stateSub{stateKey: stateKey{s.Topic, s.Callback}, Secret: []byte(s.Secret), LeaseSeconds: s.LeaseSeconds, Expires: s.Expires}})
		}
		for _, t := range v1.Topics {
			h.applyRecord(stateRecord{Topic: &t})
		}
		h.log.whole = true
		return nil
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r stateRecord
		err := json.Unmarshal(line, &r)
		switch {
		case err != nil && i == len(lines)-1 && i > 0:
			// The last line, torn by a crash: that change is lost, nothing
			// else, and the file is written whole next, without it.
			h.log.whole = true
			return nil
		case err != nil:
			return fmt.Errorf("line %d: %w", i+1, err)
		case i == 0 && r.Version != stateVersion:
			return fmt.Errorf("state version %d, this hub reads %d and 1", r.Version, stateVersion)
		}
		h.applyRecord(r)
	}
	return nil
}

func (h *Hub) applyRecord(r stateRecord) {
	switch {
	case r.Sub != nil:
		k := key{r.Sub.Topic, r.Sub.Callback}
		h.subs[k] = &sub{key: k, secret: string(r.Sub.Secret), lease: time.Duration(r.Sub.LeaseSeconds) * time.Second, expires: r.Sub.Expires}
	case r.Unsub != nil:
		delete(h.subs, key{r.Unsub.Topic, r.Unsub.Callback})
	case r.Topic != nil:
		t := r.Topic
		h.keep(&content{topic: t.Topic, ctype: t.ContentType, links: t.Links, body: t.Body, time: t.Time})
	case r.Drop != "":
		h.forget(r.Drop)
	}
}

// save writes what changed to the state file: the records noted since
// the last save appended and synced, or the whole state when the log
// has grown past twice what it held when last written whole. A failure
// is reported as a StateError event, the hub going on in memory (and
// writing the file whole next time).
func (h *Hub) save() {
	if h.opts.StateFile == "" {
		return
	}
	h.saveMu.Lock()
	defer h.saveMu.Unlock()
	h.mu.Lock()
	recs := h.log.pending
	h.log.pending = nil
	var whole []stateRecord
	if h.log.whole || h.log.size > h.log.compactAt {
		whole = h.snapshot()
	}
	h.mu.Unlock()
	var err error
	switch {
	case whole != nil:
		err = h.writeWhole(whole)
	case len(recs) > 0:
		err = h.appendRecords(recs)
	}
	if err != nil {
		h.mu.Lock()
		h.log.whole = true
		h.mu.Unlock()
		h.emit(Event{Kind: StateError, Err: err})
	}
}

func encodeRecords(recs []stateRecord) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// writeWhole replaces the state file with recs (internal/atomic).
func (h *Hub) writeWhole(recs []stateRecord) error {
	data, err := encodeRecords(recs)
	if err == nil {
		err = atomic.WriteFile(h.opts.StateFile, data, 0o600)
	}
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.log.whole = false
	h.log.size = int64(len(data))
	h.log.compactAt = max(2*h.log.size, minCompact)
	h.mu.Unlock()
	return nil
}

// appendRecords appends recs to the state file and syncs it; a line a
// crash tore is ended first (appendlog).
func (h *Hub) appendRecords(recs []stateRecord) error {
	data, err := encodeRecords(recs)
	if err != nil {
		return err
	}
	f, err := appendlog.Open(appendlog.OS, h.opts.StateFile, 0, 0o600)
	if err != nil {
		return err
	}
	n, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	h.mu.Lock()
	h.log.size += int64(n)
	h.mu.Unlock()
	return err
}

// snapshot is the whole state as records, header first; h.mu is held.
func (h *Hub) snapshot() []stateRecord {
	recs := []stateRecord{{Version: stateVersion}}
	var subs []*sub
	for _, s := range h.subs {
		subs = append(subs, s)
	}
	sort.Slice(subs, func(i, j int) bool {
		a, b := subs[i], subs[j]
		return a.topic < b.topic || a.topic == b.topic && a.callback < b.callback
	})
	for _, s := range subs {
		recs = append(recs, subRecord(s))
	}
	var topics []*content
	for _, c := range h.topics {
		topics = append(topics, c)
	}
	sort.Slice(topics, func(i, j int) bool { return topics[i].time.Before(topics[j].time) })
	for _, c := range topics {
		recs = append(recs, topicRecord(c))
	}
	return recs
}
