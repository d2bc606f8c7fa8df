package unpack

import "strings"

// A creator makes the staging files of a package's bitstreams ahead of
// the stager that fills them, on a goroutine of its own, in the order
// stage reads them: creating a file (its inode, its directory entry) costs
// as much as writing 100 KB into it, and on a file system that skips
// recently deleted inodes (ext4 without a journal) several times that,
// all of it on the one goroutine a package is staged on. It goes
// createAhead files ahead at most.
//
// What the stager sees is what creating each file when its turn comes
// gives: the same files, made in the same order, the same errors. One
// thing differs: a file created before it is the turn of the bitstream
// before it, which a failure may remove (with the staging directories
// it leaves empty). So after such a removal the stager tells it
// (removed), and when the removed file was on the path of one made ahead,
// or that one on its path, what was made ahead is removed and made again.
type creator struct {
	st   *stage
	todo []*action // the bitstreams to stage, in the order stage reads them
	next int       // todo[next] is the next one take expects
	out  chan created
	stop chan struct{}
	done chan struct{}
}

// created is a staging file made ahead, or why it could not be.
type created struct {
	a   *action
	f   stagedFile
	err error
}

// createAhead bounds the files made ahead of the stager, so the open
// descriptors they hold.
const createAhead = 16

// newCreator starts making the staging files of todo in st.
func newCreator(st *stage, todo []*action) *creator {
	c := &creator{st: st, todo: todo}
	c.start()
	return c
}

// start creates todo[next:] in order, createAhead ahead at most, until
// stopped.
func (c *creator) start() {
	c.out = make(chan created, createAhead)
	c.stop = make(chan struct{})
	c.done = make(chan struct{})
	go func(todo []*action, out chan<- created, stop, done chan struct{}) {
		defer close(done)
		for _, a := range todo {
			select {
			case <-stop:
				return
			default:
			}
			f, err := c.st.create(a.target)
			select {
			case out <- created{a, f, err}:
			case <-stop:
				c.discard(created{a, f, err})
				return
			}
		}
	}(c.todo[c.next:], c.out, c.stop, c.done)
}

// take returns a's staging file: the one made ahead, or, for a bitstream
// not in todo, one made now. The files made ahead for bitstreams before a
// that the stager passed over (one refused since todo was drawn up) are
// removed: made ahead for nothing, they would hold their targets' names.
func (c *creator) take(a *action) (stagedFile, error) {
	i := c.next
	for i < len(c.todo) && c.todo[i] != a { // the stager goes in todo's order: a is next, or not far
		i++
	}
	if i == len(c.todo) {
		return c.st.create(a.target)
	}
	for ; c.next < i; c.next++ {
		c.discard(<-c.out)
	}
	c.next++
	r := <-c.out
	return r.f, r.err
}

// removed tells c the stager removed the staged file of target (and the
// staging directories that left empty): when it was in the way of a file
// made ahead (a file where that one needs a directory, or a directory
// where that one is a file), the files made ahead are thrown away and
// made again from the next one. Only those can differ from what making
// them now gives: a removed directory with a file made ahead in it was
// not empty.
func (c *creator) removed(target string) {
	if c == nil {
		return
	}
	for _, a := range c.todo[c.next:min(len(c.todo), c.next+createAhead+1)] {
		if strings.HasPrefix(a.target, target+"/") || strings.HasPrefix(target, a.target+"/") {
			c.halt()
			c.start()
			return
		}
	}
}

// halt stops the goroutine and removes the files it made that were not
// taken.
func (c *creator) halt() {
	close(c.stop)
	<-c.done
	close(c.out)
	for r := range c.out {
		c.discard(r)
	}
}

// close stops making files and removes those not taken. c may be nil.
func (c *creator) close() {
	if c != nil && c.out != nil {
		c.halt()
		c.out = nil
	}
}

// discard closes and removes a file made and not taken.
func (c *creator) discard(r created) {
	if r.err == nil {
		r.f.Close()
		c.st.remove(r.a.target)
	}
}
