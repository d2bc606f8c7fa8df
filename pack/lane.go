package pack

import "sync"

// A lane hashes in its own goroutine, so that a package's hashes (whole
// file, and Metalink pieces) run beside its writing rather than in the
// writer.
type lane struct {
	in   chan laneJob
	done chan struct{}
}

type laneJob struct {
	c   *chunk        // data to hash, or nil for a barrier
	ack chan struct{} // closed when the lane reaches a barrier
}

// chunk is a copy of written bytes, returned to the pool once hashed.
type chunk struct {
	b []byte
}

const laneChunk = 1 << 20

var chunkPool = sync.Pool{New: func() any { return &chunk{b: make([]byte, 0, laneChunk)} }}

func startLane(write func([]byte)) *lane {
	l := &lane{in: make(chan laneJob, 32), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for j := range l.in {
			if j.c == nil {
				close(j.ack)
				continue
			}
			write(j.c.b)
			chunkPool.Put(j.c)
		}
	}()
	return l
}

// feed copies p into chunks for the lane: the caller's buffer is reused
// as soon as Write returns.
func (l *lane) feed(p []byte) {
	for len(p) > 0 {
		c := chunkPool.Get().(*chunk)
		n := min(len(p), laneChunk)
		c.b = append(c.b[:0], p[:n]...)
		l.in <- laneJob{c: c}
		p = p[n:]
	}
}

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
