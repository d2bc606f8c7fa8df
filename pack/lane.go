package pack

import (
	"sync"
	"sync/atomic"
)

// A lane hashes in its own goroutine, so that a package's hashes run
// beside its writing rather than in the writer.
type lane struct {
	in   chan laneJob
	done chan struct{}
}

// laneJob is a chunk to hash, or a barrier (c == nil).
type laneJob struct {
	c     *chunk
	piece int           // the Metalink piece the chunk belongs to
	dual  bool          // the whole-package lane hashes the piece too
	last  bool          // the chunk ends its piece
	ack   chan struct{} // closed when the lane reaches a barrier
}

// chunk is a copy of written bytes, shared by the lanes that hash it and
// returned to the pool by the last one.
type chunk struct {
	b    []byte
	refs atomic.Int32
}

const (
	laneChunk = 1 << 20
	laneDepth = 32
)

var chunkPool = sync.Pool{New: func() any { return &chunk{b: make([]byte, 0, laneChunk)} }}

func newChunk(p []byte, refs int32) *chunk {
	c := chunkPool.Get().(*chunk)
	c.b = append(c.b[:0], p...)
	c.refs.Store(refs)
	return c
}

func startLane(hash func(laneJob)) *lane {
	l := &lane{in: make(chan laneJob, laneDepth), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for j := range l.in {
			if j.c == nil {
				close(j.ack)
				continue
			}
			hash(j)
			if j.c.refs.Add(-1) == 0 {
				chunkPool.Put(j.c)
			}
		}
	}()
	return l
}

// backlog is the number of chunks waiting.
func (l *lane) backlog() int { return len(l.in) }

// wait returns once the lane has hashed everything fed to it so far.
func (l *lane) wait() {
	ack := make(chan struct{})
	l.in <- laneJob{ack: ack}
	<-ack
}

func (l *lane) stop() {
	close(l.in)
	<-l.done
}
