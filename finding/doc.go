// Package finding is what rsdump's library tells its caller besides its
// results, and depends on no other package of rsdump, so that every one
// of them can speak it:
//
//   - a Finding, the one record of a rule checked (severity, code, where,
//     message): by pkgread on what reading a dump finds, by verify and
//     unpack on packages, dump documents and trees, by resourcesync and
//     metalink on the documents they read; with its Counts, the Reporter
//     that counts findings and hands them on one at a time, and the names
//     of verify's checks;
//   - an Event, the one progress contract of the long operations (pack,
//     verify, unpack, get, sync, metalink's Builder), which a caller
//     subscribes to through their Options.Events: Progress and Planned
//     (the work in bytes), Note, findings, and a package's own events.
//
// The CLI renders both.
package finding
