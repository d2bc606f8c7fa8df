package unpack

import (
	"os"
	"sync"
)

// syncer fsyncs and closes staged files on a few goroutines, so that the
// disk flushes one bitstream while the next is read and hashed. Nothing is
// renamed before its batch has been waited for.
type syncer struct {
	jobs chan syncJob
	wg   sync.WaitGroup
}

type syncJob struct {
	f     *os.File
	batch *syncBatch
}

// syncWorkers is enough to keep a disk's queue busy; the channel bounds
// the files open at once.
const syncWorkers = 4

func newSyncer() *syncer {
	s := &syncer{jobs: make(chan syncJob, 64)}
	for range syncWorkers {
		s.wg.Add(1)
		go s.work()
	}
	return s
}

func (s *syncer) work() {
	defer s.wg.Done()
	for j := range s.jobs {
		err := j.f.Sync()
		if cerr := j.f.Close(); err == nil {
			err = cerr
		}
		j.batch.done(j.f.Name(), err)
	}
}

func (s *syncer) stop() {
	close(s.jobs)
	s.wg.Wait()
}

// syncBatch collects the files of one package.
type syncBatch struct {
	s    *syncer
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs map[string]error
}

func (s *syncer) batch() *syncBatch { return &syncBatch{s: s, errs: map[string]error{}} }

// add hands f over: the batch syncs and closes it.
func (b *syncBatch) add(f *os.File) {
	b.wg.Add(1)
	b.s.jobs <- syncJob{f, b}
}

func (b *syncBatch) done(name string, err error) {
	if err != nil {
		b.mu.Lock()
		b.errs[name] = err
		b.mu.Unlock()
	}
	b.wg.Done()
}

// wait returns the first error, once every file added is synced.
func (b *syncBatch) wait() error {
	b.wg.Wait()
	for _, err := range b.errs {
		return err
	}
	return nil
}
