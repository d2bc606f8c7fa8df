package finding

// Event is one thing a long operation (pack, verify, unpack, get, sync,
// metalink's Builder) tells its caller while it works, through the
// Events func(Event) of its Options. Every operation speaks the events
// of this package: Progress and Planned (the work in bytes), Note (a step
// in words) and Finding (a check's result, one at a time). A package adds
// its own where a caller needs more (pack.PackageDone, transfer's
// *MirrorDropped); a caller ignores those it does not know. Events may
// come from several goroutines at once, so the callback must be safe for
// concurrent use and must not block for long.
type Event any

// Progress counts Bytes more of the work done. Unit, when set, names what
// is being worked on (a file being hashed).
type Progress struct {
	Bytes int64
	Unit  string
}

// Planned adds Bytes to the work ahead, before Progress counts them: the
// packages' lengths known from the dump documents and the file system
// before any is read, later the size of one only opening it tells. When
// a run completes, its Progress adds up to its Planned.
type Planned struct {
	Bytes int64
}

// Note tells a step the operation takes, or a choice it made that the
// user may want to know of, in words.
type Note struct {
	Msg string
}

// Send calls events with e, unless events is nil.
func Send(events func(Event), e Event) {
	if events != nil {
		events(e)
	}
}

// OnFindings returns an Events callback that passes the findings to fn,
// one at a time as a Reporter sends them, and ignores every other event:
// for a caller that only wants the findings.
func OnFindings(fn func(Finding)) func(Event) {
	return func(e Event) {
		if f, ok := e.(Finding); ok {
			fn(f)
		}
	}
}
