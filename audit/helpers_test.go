package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
)

var day0 = time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)

// tree is a Destination made as rsdump leaves one: files, and the written
// log's record of each (length, sha-256, mtime).
type tree struct {
	t   *testing.T
	dir string
}

func newTree(t *testing.T, files map[string]string) *tree {
	tr := &tree{t: t, dir: t.TempDir()}
	tr.write(files)
	return tr
}

func sha(data string) string {
	s := sha256.Sum256([]byte(data))
	return "sha-256:" + hex.EncodeToString(s[:])
}

// write adds (or replaces) files, as a sync would.
func (tr *tree) write(files map[string]string) {
	t := tr.t
	t.Helper()
	d, err := deststate.Open(tr.dir, deststate.Options{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var recs []deststate.Record
	for rel, data := range files {
		p := filepath.Join(tr.dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, day0, day0)
		recs = append(recs, deststate.Record{Path: rel, Length: int64(len(data)), Hash: sha(data), Mtime: day0})
	}
	if err := d.Append(recs); err != nil {
		t.Fatal(err)
	}
}

func (tr *tree) path(rel string) string { return filepath.Join(tr.dir, filepath.FromSlash(rel)) }

// flip damages a byte of a file, keeping its length and mtime: only a
// hash shows it.
func (tr *tree) flip(rel string) {
	p := tr.path(rel)
	b, err := os.ReadFile(p)
	if err != nil {
		tr.t.Fatal(err)
	}
	b[len(b)/2] ^= 0x20
	os.WriteFile(p, b, 0o644)
	os.Chtimes(p, day0, day0)
}

// collector is a Recorder that keeps what it is given.
type collector struct {
	mu       sync.Mutex
	events   []Event
	summary  *Summary
	findings []finding.Finding
}

func (c *collector) Event(ev Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, ev)
	return nil
}

func (c *collector) Begin(Summary) error { return nil }

func (c *collector) End(s Summary) error { c.summary = &s; return nil }

func (c *collector) onEvent(e finding.Event) {
	if f, ok := e.(finding.Finding); ok {
		c.mu.Lock()
		c.findings = append(c.findings, f)
		c.mu.Unlock()
	}
}

// checked are the paths a run checked.
func (c *collector) checked() map[string]Event {
	out := map[string]Event{}
	for _, ev := range c.events {
		if ev.Type == TypeFixity {
			out[ev.Path] = ev
		}
	}
	return out
}

// audit runs an audit of the tree at now with sel.
func (tr *tree) audit(sel Selection, now time.Time, o Options) (*Summary, *collector) {
	tr.t.Helper()
	c := &collector{}
	o.Select, o.Now = sel, func() time.Time { return now }
	o.Recorders = append(o.Recorders, c)
	o.Events = c.onEvent
	sum, err := Run(context.Background(), tr.dir, o)
	if err != nil {
		tr.t.Fatal(err)
	}
	return sum, c
}

// sized are n files of sizes 1..n*step bytes, some empty.
func sized(n, step int) map[string]string {
	out := map[string]string{}
	for i := range n {
		b := make([]byte, (i%9)*step+i)
		for j := range b {
			b[j] = byte('a' + (i+j)%26)
		}
		out[fmt.Sprintf("d%d/f%03d.bin", i%4, i)] = string(b)
	}
	return out
}
