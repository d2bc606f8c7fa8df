package pack

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"hash"
	"sync"

	"github.com/rsdump/rsdump/internal/digest"
)

// pieceSums hashes the package in fixed-length Metalink pieces. Each
// piece is hashed either by the whole-package lane, in the same pass as
// the package hash (digest.WriteBoth: about 1.4 times one hash), or alone
// by a lane of its own, in parallel (twice the work, but off the package
// lane's path). The writer picks per piece: dual while the package lane
// keeps up, the piece lane when the package lane falls well behind, so
// the hashing costs the least CPU without slowing the writer.
type pieceSums struct {
	length int64
	lane   *lane     // hashes the pieces not marked dual
	dualH  hash.Hash // used by the package lane only
	soloH  hash.Hash // used by the piece lane only

	// The writer's view.
	cur   int   // the piece being written
	inCur int64 // its bytes written so far
	dual  bool  // whether the package lane hashes it

	mu   sync.Mutex
	sums []string // by piece; written by both lanes
}

// pickDual decides who hashes a new piece from the lanes' queue lengths:
// the package lane, unless it has fallen well behind (then the writer is
// faster than one core hashing twice, and a second core is better used).
// Tests replace it to force either path.
var pickDual = func(wholeQueue, pieceQueue int) bool {
	return wholeQueue < laneDepth*3/4 || wholeQueue <= pieceQueue
}

func newPieceSums(length int64) *pieceSums {
	p := &pieceSums{length: length, dualH: sha256.New(), soloH: sha256.New()}
	p.lane = startLane(p.hashSolo)
	return p
}

// feed queues the bytes of p that belong to the current piece and returns
// how many that was.
func (p *pieceSums) feed(b []byte, whole *lane) int {
	if p.inCur == 0 {
		// Pieces not a whole number of sha-256 blocks never line up with
		// the package's blocks: WriteBoth would hash them twice anyway.
		p.dual = p.length%64 == 0 && pickDual(whole.backlog(), p.lane.backlog())
	}
	n := int(min(int64(len(b)), laneChunk, p.length-p.inCur))
	p.inCur += int64(n)
	j := laneJob{piece: p.cur, dual: p.dual, last: p.inCur == p.length}
	if p.dual {
		j.c = newChunk(b[:n], 1)
		whole.in <- j
	} else {
		j.c = newChunk(b[:n], 2)
		whole.in <- j
		p.lane.in <- j
	}
	if j.last {
		p.cur, p.inCur = p.cur+1, 0
	}
	return n
}

func (p *pieceSums) hashDual(j laneJob, whole hash.Hash) {
	digest.WriteBoth(p.dualH, whole, j.c.b)
	if j.last {
		p.set(j.piece, p.dualH)
	}
}

func (p *pieceSums) hashSolo(j laneJob) {
	p.soloH.Write(j.c.b)
	if j.last {
		p.set(j.piece, p.soloH)
	}
}

// set records piece i's sum and resets h for the next piece.
func (p *pieceSums) set(i int, h hash.Hash) {
	s := hex.EncodeToString(h.Sum(nil))
	h.Reset()
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.sums) <= i {
		p.sums = append(p.sums, "")
	}
	p.sums[i] = s
}

// curHash is the hash holding the current piece's partial state; only
// valid once both lanes are idle.
func (p *pieceSums) curHash() hash.Hash {
	if p.dual {
		return p.dualH
	}
	return p.soloH
}

// finish returns every piece hash, the last short piece included. The
// lanes must be idle.
func (p *pieceSums) finish() []string {
	if p.inCur > 0 {
		p.set(p.cur, p.curHash())
		p.cur, p.inCur = p.cur+1, 0
	}
	return p.sums[:p.cur]
}

type pieceState struct {
	cur   int
	inCur int64
	dual  bool
	h     []byte
}

// save and restore need both lanes idle.
func (p *pieceSums) save() (pieceState, error) {
	b, err := p.curHash().(encoding.BinaryMarshaler).MarshalBinary()
	return pieceState{cur: p.cur, inCur: p.inCur, dual: p.dual, h: b}, err
}

func (p *pieceSums) restore(s pieceState) error {
	p.cur, p.inCur, p.dual = s.cur, s.inCur, s.dual
	p.sums = p.sums[:min(len(p.sums), s.cur)]
	p.dualH.Reset() // a piece begun after the save may have state in either
	p.soloH.Reset()
	return p.curHash().(encoding.BinaryUnmarshaler).UnmarshalBinary(s.h)
}
