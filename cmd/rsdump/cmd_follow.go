package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/follow"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
)

// doFollow is sync --follow: one line on stderr (with --json, one object
// on stdout) per event, until SIGINT or SIGTERM, which unsubscribe and
// exit 0.
func doFollow(ctx context.Context, source resourcesync.Location, f syncFlags, o replica.Options, stdout, stderr io.Writer) error {
	var mu sync.Mutex
	enc := json.NewEncoder(stdout)
	say := func(e followLine) {
		mu.Lock()
		defer mu.Unlock()
		if f.json {
			enc.Encode(e)
			return
		}
		if f.quiet && e.Event != "error" && e.Event != "sync failed" {
			return
		}
		fmt.Fprintf(stderr, "rsdump: %s\n", escapeControl(e.Text))
	}
	o.Events = func(e finding.Event) {
		if fd, ok := e.(finding.Finding); ok && fd.Severity >= finding.Warning {
			say(followLine{Event: fd.Severity.String(), Text: fd.String()})
		}
	}
	fo := follow.Options{Sync: o, CallbackAddr: f.callbackAddr, CallbackURL: f.callbackURL, Poll: f.poll, Lease: f.lease,
		Events: func(e finding.Event) {
			if fe, ok := e.(follow.Event); ok {
				say(newFollowLine(fe))
			}
		}}
	// nil once stopped by a signal, cleanly.
	return follow.Follow(ctx, source, f.dest, fo)
}

// followLine is one event of sync --follow, as --json prints it.
type followLine struct {
	Event      string `json:"event"`
	Topic      string `json:"topic,omitempty"`
	Hub        string `json:"hub,omitempty"`
	Capability string `json:"capability,omitempty"`
	From       string `json:"from,omitempty"`
	Until      string `json:"until,omitempty"`
	Why        string `json:"why,omitempty"`
	Written    int    `json:"written,omitempty"`
	Deleted    int    `json:"deleted,omitempty"`
	Errors     int    `json:"errors,omitempty"`
	Error      string `json:"error,omitempty"`
	Text       string `json:"text"`
}

func newFollowLine(e follow.Event) followLine {
	l := followLine{Event: e.Kind.String(), Topic: e.Topic, Hub: e.Hub, Capability: e.Capability, Why: e.Why, Text: e.String()}
	if !e.From.IsZero() {
		l.From = resourcesync.FormatTime(e.From)
	}
	if !e.Until.IsZero() {
		l.Until = resourcesync.FormatTime(e.Until)
	}
	if r := e.Result; r != nil {
		l.Until = resourcesync.FormatTime(r.Until)
		l.Written, l.Deleted, l.Errors = r.Written, r.Deleted, r.Errors
		l.Text += fmt.Sprintf(" (%d written, %d deleted, %d errors)", r.Written, r.Deleted, r.Errors)
	}
	if e.Err != nil {
		l.Error = e.Err.Error()
	}
	return l
}
