package pack

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// record is one file as a --changes run compares it: a baseline entry, a
// file of the new state, or a change. Records stream through temporary
// files as tab-separated lines: a name pack accepts holds no tab, newline
// or other control character (xmlSafe), so no escaping is needed.
type record struct {
	Rel      string
	Size     int64
	Mtime    int64 // unix nanoseconds; 0 when unknown
	Mode     uint32
	Hash     string // the hash attribute, "sha-256:..."
	Type     string // media type
	Change   string // created, updated or deleted; empty for a state entry
	Datetime int64  // unix nanoseconds: the time of the change
	Seq      int64  // order of the changes to one file, in a change log
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
	for _, n := range []int64{r.Datetime, r.Seq} {
		b = append(b, '\t')
		b = strconv.AppendInt(b, n, 10)
	}
	return append(b, '\n')
}

func parseRecord(line string) (record, error) {
	var f [recordFields]string
	for i := range recordFields - 1 {
		j := strings.IndexByte(line, '\t')
		if j < 0 {
			return record{}, errors.New("malformed line")
		}
		f[i], line = line[:j], line[j+1:]
	}
	if strings.IndexByte(line, '\t') >= 0 {
		return record{}, errors.New("malformed line")
	}
	f[recordFields-1] = line
	if f[0] == "" {
		return record{}, errors.New("malformed line: no path")
	}
	r := record{Rel: f[0], Hash: f[4], Type: f[5], Change: f[6]}
	var mode int64
	for i, p := range [...]*int64{&r.Size, &r.Mtime, &mode, nil, nil, nil, &r.Datetime, &r.Seq} {
		if p == nil {
			continue
		}
		n, ok := parseInt(f[i+1])
		if !ok {
			return record{}, fmt.Errorf("malformed number %q", f[i+1])
		}
		*p = n
	}
	r.Mode = uint32(mode)
	return r, nil
}

// parseInt is strconv.ParseInt(s, 10, 64) without its error value for
// the numbers appendTo writes: every record has five of them, and a
// --changes run reads its records several times. Anything else, strconv
// decides.
func parseInt(s string) (int64, bool) {
	digits, neg := strings.CutPrefix(s, "-")
	if n, ok := parseDigits(digits); ok {
		switch {
		case neg && n <= 1<<63:
			return int64(-n), true
		case !neg && n < 1<<63:
			return int64(n), true
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// parseDigits reads 1 to 19 decimal digits, which fit in a uint64.
func parseDigits(s string) (uint64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + uint64(c)
	}
	return n, true
}

// keptLine reads a line (without its end) that a --changes run's walk
// has for a file it found unchanged (differ.compare), whose change field
// is empty: ok is false for any other. state is the line as the new
// state has it, its last field (seq) cut off for the caller to write as
// 0; seq is the file's number in the baseline, 0 if none.
func keptLine(line []byte) (rel, state []byte, seq int64, ok bool) {
	t3 := bytes.LastIndexByte(line, '\t')
	if t3 < 0 {
		return nil, nil, 0, false
	}
	t2 := bytes.LastIndexByte(line[:t3], '\t')
	if t2 < 0 {
		return nil, nil, 0, false
	}
	t1 := bytes.LastIndexByte(line[:t2], '\t')
	t0 := bytes.IndexByte(line, '\t')
	if t1 < 0 || t1+1 != t2 || string(line[t2+1:t3]) != "0" || t0 <= 0 {
		return nil, nil, 0, false
	}
	n, ok := parseDigits(string(line[t3+1:]))
	if !ok || n >= 1<<63 {
		return nil, nil, 0, false
	}
	return line[:t0], line[:t3+1], int64(n), true
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

// writeRun writes the line of a sparse walk that stands for n kept
// files (walkRun): a tab, then n.
func (w *recWriter) writeRun(n int64) error {
	w.buf = strconv.AppendInt(append(w.buf[:0], '\t'), n, 10)
	w.buf = append(w.buf, '\n')
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
func comparePaths[A, B ~string | ~[]byte](a A, b B) int {
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
	case a.Datetime < b.Datetime:
		return -1
	case a.Datetime > b.Datetime:
		return 1
	}
	return byPath(a, b)
}
