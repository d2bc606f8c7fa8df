package websub

import (
	"errors"
	"time"
)

// EventKind says what happened.
type EventKind int

// The events a hub reports.
const (
	Subscribed   EventKind = iota + 1 // a subscription verified and active; Lease is granted
	Unsubscribed                      // an unsubscription verified; the subscription is gone
	Refused                           // verification of intent failed (Err): nothing changed
	Published                         // content received for Topic, queued for Subscribers
	FetchFailed                       // hub.mode=publish: fetching Topic failed (Err)
	Delivered                         // content delivered to Callback, at Attempt
	Retrying                          // a delivery failed (Err); the next try is after Wait
	Dropped                           // a delivery given up after Attempt tries (Err); the subscription stays
	Gone                              // the subscriber answered 410 Gone: its subscription is removed
	Expired                           // a lease ran out: the subscription is removed
	StateError                        // the state file could not be written (Err)
	Denied                            // an accepted subscription denied after all (Err: why), told to the callback
)

var kindNames = map[EventKind]string{
	Subscribed: "subscribed", Unsubscribed: "unsubscribed", Refused: "refused", Published: "published",
	FetchFailed: "fetch failed", Delivered: "delivered", Retrying: "retrying", Dropped: "dropped",
	Gone: "gone", Expired: "expired", StateError: "state error", Denied: "denied",
}

func (k EventKind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "unknown"
}

// Event is one thing that happened in the hub. Fields that do not apply
// to a kind are zero.
type Event struct {
	Kind        EventKind
	Topic       string
	Callback    string
	Lease       time.Duration // Subscribed
	Subscribers int           // Published
	Attempt     int           // Delivered, Retrying, Dropped
	Wait        time.Duration // Retrying
	Err         error
}

// Errors of verification and delivery, wrapped with the URL concerned.
var (
	ErrStatus    = errors.New("answered with a status other than 2xx")
	ErrChallenge = errors.New("did not echo hub.challenge")
	// ErrSuperseded is a verified request that came in before another for
	// the same subscription, verified first: the later one stands.
	ErrSuperseded = errors.New("superseded by a later request for the same subscription")
)
