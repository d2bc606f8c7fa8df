package pack

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// record is one file as a --changes run compares it: a baseline entry, a
// file of the new state, or a change. Records stream through temporary
// files as tab-separated lines: a name pack accepts holds no tab, newline
// or other control character (xmlSafe), so no escaping is needed.
type record struct {
	Rel     string
	Size    int64
	Mtime   int64 // unix nanoseconds; 0 when unknown
	Mode    uint32
	Hash    string // the hash attribute, "sha-256:..."
	Type    string // media type
	Change  string // created, updated or deleted; empty for a state entry
	Lastmod int64  // unix nanoseconds: the time of the change
	Seq     int64  // order of the changes to one file, in a change log
}

const recordFields = 9

func (r *record) appendTo(b []byte) []byte {
	b = append(b, r.Rel...)
	for _, n := range []int64{r.Size, r.Mtime, int64(r.Mode)} {
		b = append(b, '\t')
		b = strconv.AppendInt(b, n, 10)
	}
	b = append(b, '\t')
	b = append(b, r.Hash...)
	b = append(b, '\t')
	b = append(b, r.Type...)
	b = append(b, '\t')
	b = append(b, r.Change...)
	for _, n := range []int64{r.Lastmod, r.Seq} {
		b = append(b, '\t')
		b = strconv.AppendInt(b, n, 10)
	}
	return append(b, '\n')
}

func parseRecord(line string) (record, error) {
	var f [recordFields]string
	for i := range f {
		var ok bool
		if i == recordFields-1 {
			f[i], ok = line, !strings.Contains(line, "\t")
		} else {
			f[i], line, ok = strings.Cut(line, "\t")
		}
		if !ok {
			return record{}, errors.New("malformed line")
		}
	}
	if f[0] == "" {
		return record{}, errors.New("malformed line: no path")
	}
	var r record
	r.Rel, r.Hash, r.Type, r.Change = f[0], f[4], f[5], f[6]
	var mode int64
	for i, p := range []*int64{&r.Size, &r.Mtime, &mode, nil, nil, nil, &r.Lastmod, &r.Seq} {
		if p == nil {
			continue
		}
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return record{}, fmt.Errorf("malformed number %q", f[i+1])
		}
		*p = n
	}
	r.Mode = uint32(mode)
	return r, nil
}

// recWriter writes records to w.
type recWriter struct {
	w   *bufio.Writer
	buf []byte
}

func newRecWriter(w io.Writer) *recWriter { return &recWriter{w: bufio.NewWriterSize(w, 256<<10)} }

func (w *recWriter) write(r *record) error {
	w.buf = r.appendTo(w.buf[:0])
	_, err := w.w.Write(w.buf)
	return err
}

func (w *recWriter) flush() error { return w.w.Flush() }

// recReader reads records written by a recWriter; name is used in errors.
type recReader struct {
	name string
	sc   *bufio.Scanner
	line int
}

func newRecReader(name string, r io.Reader) *recReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &recReader{name: name, sc: sc}
}

// next returns the next record; ok is false at the end.
func (r *recReader) next() (rec record, ok bool, err error) {
	if !r.sc.Scan() {
		if err := r.sc.Err(); err != nil {
			return record{}, false, fmt.Errorf("%s: %w", r.name, err)
		}
		return record{}, false, nil
	}
	r.line++
	rec, err = parseRecord(r.sc.Text())
	if err != nil {
		return record{}, false, fmt.Errorf("%s: line %d: %w", r.name, r.line, err)
	}
	return rec, true, nil
}

// comparePaths orders slash-separated relative paths as the walk visits
// them: depth first, the entries of a directory sorted by name. That is
// byte order with '/' below every other byte: "a/b" comes before "a-b",
// since the directory "a" sorts before the file "a-b".
func comparePaths(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		switch {
		case ca == '/':
			return -1
		case cb == '/':
			return 1
		case ca < cb:
			return -1
		}
		return 1
	}
	return len(a) - len(b)
}

// byPath orders records as the walk does, and the changes to one file in
// the order they were made.
func byPath(a, b *record) int {
	if c := comparePaths(a.Rel, b.Rel); c != 0 {
		return c
	}
	return int(a.Seq - b.Seq)
}

// byTime orders changes chronologically, ties in walk order: the order
// of a Change Dump.
func byTime(a, b *record) int {
	switch {
	case a.Lastmod < b.Lastmod:
		return -1
	case a.Lastmod > b.Lastmod:
		return 1
	}
	return byPath(a, b)
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
