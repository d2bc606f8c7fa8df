package trs

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// spool holds a view's events in a temporary file, a line each, with the
// offset where each Change Log segment starts: a segment is one read of
// its lines, however long the Change Log, and memory holds only the
// offsets. The file is unlinked once created (where the system allows),
// so nothing is left behind; it is closed when the view is replaced and
// no request reads it any more.
type spool struct {
	f       *os.File
	w       *bufio.Writer
	size    int64
	offsets []int64 // offsets[k-1] is where segment k starts
	mu      sync.Mutex
	readers int
	retired bool
}

func newSpool() (*spool, error) {
	f, err := os.CreateTemp("", "rsdump-trs-*.spool")
	if err != nil {
		return nil, err
	}
	if runtime.GOOS != "windows" {
		os.Remove(f.Name())
	}
	return &spool{f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

// add appends e; first says it starts a segment.
func (s *spool) add(e event, first bool) error {
	if first {
		s.offsets = append(s.offsets, s.size)
	}
	line := fmt.Sprintf("%d\t%s\t%d\t%s\t%s\n", e.order, e.change, e.when.UnixNano(), strconv.FormatBool(e.when.IsZero()), e.changed)
	n, err := s.w.WriteString(line)
	s.size += int64(n)
	return err
}

func (s *spool) finish() error { return s.w.Flush() }

// segment reads the events of segment k.
func (s *spool) segment(k int64) ([]event, error) {
	if k < 1 || k > int64(len(s.offsets)) {
		return nil, nil
	}
	end := s.size
	if k < int64(len(s.offsets)) {
		end = s.offsets[k]
	}
	b := make([]byte, end-s.offsets[k-1])
	if _, err := s.f.ReadAt(b, s.offsets[k-1]); err != nil && err != io.EOF {
		return nil, err
	}
	var out []event
	for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		f := strings.SplitN(string(line), "\t", 5)
		if len(f) != 5 {
			return nil, fmt.Errorf("spooled event %q", line)
		}
		order, _ := strconv.ParseInt(f[0], 10, 64)
		ns, _ := strconv.ParseInt(f[2], 10, 64)
		e := event{order: order, change: f[1], kind: kinds[f[1]], changed: f[4]}
		if f[3] != "true" {
			e.when = time.Unix(0, ns).UTC()
		}
		out = append(out, e)
	}
	return out, nil
}

// acquire marks a request reading the spool; false when it is closed.
func (s *spool) acquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retired && s.readers == 0 {
		return false
	}
	s.readers++
	return true
}

func (s *spool) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readers--
	s.closeIdle()
}

// retire closes the spool once no request reads it.
func (s *spool) retire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retired = true
	s.closeIdle()
}

func (s *spool) closeIdle() {
	if s.retired && s.readers == 0 && s.f != nil {
		name := s.f.Name()
		s.f.Close()
		s.f = nil
		if runtime.GOOS == "windows" {
			os.Remove(name)
		}
	}
}
