// Package notify is the Source's side of ResourceSync's push
// specifications: it builds the framework notifications (ResourceSync
// Framework Notification §3) and change notifications (Change
// Notification §3) of a pack run and submits them to the WebSub hub of
// their channel, the way §4.1 of each says: a POST of the notification
// with Content-Type: application/xml and Link rel="self" (the topic),
// rel="hub" and rel="resourcesync" (the Capability List).
//
// A notification that cannot be delivered is retried (internal/httpc's
// DoRetry), then reported to Events; it never fails the run that
// published the documents, which are in place whether or not anyone
// hears of them.
package notify
