package replica_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/racetest"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// bigTRS is a Tracked Resource Set of many members on a loopback server,
// every page and document written as it is asked for (nothing held): a
// Base of members r000000… in pages, a Change Log of events in segments
// (the cutoff event, order 1, in the oldest), and behind its
// rel="resourcesync" Link a Capability List naming a Resource List
// (an index over parts) with a hash for every member and a Change List
// whose n-th entry is the event of order n.
type bigTRS struct {
	members, pageSize int // members, and members a page of the Base
	events, segSize   int // events after the cutoff, and events a segment
	srv               *httptest.Server
}

const trsPrefix = "@prefix trs: <http://open-services.net/ns/core/trs#> .\n@prefix ldp: <http://www.w3.org/ns/ldp#> .\n"

var bigAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// member is the n-th member's <loc>. The Base lists them in another
// order than theirs (a stride prime to their number), each page after the
// first repeating a member of the first page.
func (b *bigTRS) member(n int) string { return fmt.Sprintf("%s/res/r%06d", b.srv.URL, n) }

// changed is the member the event of order o (≥ 2) changes: members
// 0 … events-1, one each; the cutoff event (order 1) created member 0.
func (b *bigTRS) changed(o int) int { return max(o-2, 0) }

func newBigTRS(t *testing.T, members, pageSize, events, segSize int) *bigTRS {
	b := &bigTRS{members: members, pageSize: pageSize, events: events, segSize: segSize}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *bigTRS) serve(w http.ResponseWriter, r *http.Request) {
	bw := bufio.NewWriterSize(w, 64<<10)
	defer bw.Flush()
	segments := (b.events + 1 + b.segSize - 1) / b.segSize
	switch p := r.URL.Path; {
	case p == "/trs":
		w.Header().Set("Content-Type", "text/turtle")
		w.Header().Set("Link", `</capabilitylist.xml>; rel="resourcesync"`)
		fmt.Fprintf(bw, "%s<trs> a trs:TrackedResourceSet ; trs:base <base> ; trs:changeLog [ a trs:ChangeLog ; ", trsPrefix)
		b.segment(bw, segments)
		io.WriteString(bw, "] .\n")
		b.eventTriples(bw, segments)
	case strings.HasPrefix(p, "/log/"):
		k, err := strconv.Atoi(p[5:])
		if err != nil || k < 1 || k >= segments {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/turtle")
		fmt.Fprintf(bw, "%s<%s> a trs:ChangeLog ; ", trsPrefix, p)
		b.segment(bw, k)
		io.WriteString(bw, ".\n")
		b.eventTriples(bw, k)
	case p == "/base":
		http.Redirect(w, r, "/base/1", http.StatusSeeOther)
	case strings.HasPrefix(p, "/base/"):
		k, err := strconv.Atoi(p[6:])
		pages := (b.members + b.pageSize - 1) / b.pageSize
		if err != nil || k < 1 || k > pages {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/turtle")
		if k < pages {
			w.Header().Set("Link", fmt.Sprintf(`</base/%d>; rel="next"`, k+1))
		}
		fmt.Fprintf(bw, "%s</base> ", trsPrefix)
		if k == 1 {
			io.WriteString(bw, "a ldp:DirectContainer ; trs:cutoffEvent <urn:e:1> ; ")
		}
		io.WriteString(bw, "ldp:member ")
		from, to := (k-1)*b.pageSize, min(k*b.pageSize, b.members)
		for j := from; j < to; j++ {
			fmt.Fprintf(bw, "<%s>, ", b.member(j*7919%b.members))
		}
		fmt.Fprintf(bw, "<%s> .\n", b.member(((k-1)%b.pageSize)*7919%b.members)) // one of the first page's again
	case p == "/capabilitylist.xml":
		w.Header().Set("Content-Type", "application/xml")
		resourcesync.EncodeAll(bw, resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapCapabilityList}}, []resourcesync.URL{
			{Loc: b.srv.URL + "/resourcelist.xml", MD: &resourcesync.MD{Capability: resourcesync.CapResourceList}},
			{Loc: b.srv.URL + "/changelist.xml", MD: &resourcesync.MD{Capability: resourcesync.CapChangeList}},
		})
	case p == "/resourcelist.xml":
		w.Header().Set("Content-Type", "application/xml")
		var parts []resourcesync.URL
		for i := 0; i*resourcesync.MaxEntries < b.members; i++ {
			parts = append(parts, resourcesync.URL{Loc: fmt.Sprintf("%s/rl/%d", b.srv.URL, i)})
		}
		resourcesync.EncodeAll(bw, resourcesync.Header{Kind: resourcesync.SitemapIndex, MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: bigAt}}, parts)
	case strings.HasPrefix(p, "/rl/"):
		i, _ := strconv.Atoi(p[4:])
		w.Header().Set("Content-Type", "application/xml")
		enc, _ := resourcesync.NewEncoder(bw, resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: bigAt}})
		for n := i * resourcesync.MaxEntries; n < min((i+1)*resourcesync.MaxEntries, b.members); n++ {
			enc.Encode(resourcesync.URL{Loc: b.member(n), Lastmod: bigAt, MD: &resourcesync.MD{Hash: fmt.Sprintf("sha-256:%064x", n), Length: resourcesync.Int64(int64(n % 1000))}})
		}
		enc.Close()
	case p == "/changelist.xml":
		w.Header().Set("Content-Type", "application/xml")
		enc, _ := resourcesync.NewEncoder(bw, resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapChangeList, From: bigAt, Until: bigAt.Add(time.Duration(b.events+2) * time.Second)}})
		for o := 1; o <= b.events+1; o++ {
			change := resourcesync.ChangeUpdated
			if o == 1 {
				change = resourcesync.ChangeCreated
			}
			n := b.changed(o)
			enc.Encode(resourcesync.URL{Loc: b.member(n), MD: &resourcesync.MD{Change: change, Datetime: bigAt.Add(time.Duration(o) * time.Second), Hash: fmt.Sprintf("sha-256:%064x", 1<<40+o), Length: resourcesync.Int64(int64(o))}})
		}
		enc.Close()
	default:
		http.NotFound(w, r)
	}
}

// segment writes the trs:change and trs:previous of segment k, its
// events newest first.
func (b *bigTRS) segment(w io.Writer, k int) {
	io.WriteString(w, "trs:change ")
	from, to := (k-1)*b.segSize+1, min(k*b.segSize, b.events+1)
	for o := to; o >= from; o-- {
		sep := ", "
		if o == from {
			sep = " ; "
		}
		fmt.Fprintf(w, "<urn:e:%d>%s", o, sep)
	}
	if k > 1 {
		fmt.Fprintf(w, "trs:previous </log/%d> ", k-1)
	}
}

func (b *bigTRS) eventTriples(w io.Writer, k int) {
	from, to := (k-1)*b.segSize+1, min(k*b.segSize, b.events+1)
	for o := to; o >= from; o-- {
		kind := "trs:Modification"
		if o == 1 {
			kind = "trs:Creation"
		}
		fmt.Fprintf(w, "<urn:e:%d> a %s ; trs:changed <%s> ; trs:order %d .\n", o, kind, b.member(b.changed(o)), o)
	}
}

// TestTRSRebaseMemoryBounded rebases from a Base of 200,000 members (40
// pages, each repeating a member of the first) with 20,000 events after
// the cutoff (10 segments), behind them a Resource List and a Change List
// with a hash for each (100,000 members and 10,000 events under -race):
// the live heap, sampled after a GC every 50 ms, stays within a bound
// that does not grow with the members or the events. The lists the sync
// writes are read, not applied (ApplyList's memory is measured apart, by
// benchmarks/listmem): the Base's list names every member once but those
// the events change, each with its hash and lastmod, and the events'
// list each event with its Change List entry's hash, oldest first.
//
// On the code before (the members in a slice and a set, a map of the
// Source's entries and a slice of the list's, the events in a slice and
// two maps) the live heap grew by 142-151 MiB (71 MiB under -race); on
// the sorts and joins on disk, by 17-24 MiB (14-17 MiB under -race), in
// about the same time (3.6-3.9 s against 3.8-4.3 s).
func TestTRSRebaseMemoryBounded(t *testing.T) {
	members, events := 200_000, 20_000
	if racetest.Enabled {
		members, events = 100_000, 10_000 // 40 s under -race at 200,000
	}
	b := newBigTRS(t, members, 5_000, events, 2_000)
	var listed, hashed, changes, changesHashed atomic.Int64
	var order []int64
	replica.SetApplyList(t, func(ctx context.Context, doc, dir string, o unpack.Options) (*unpack.Result, error) {
		ld := resourcesync.Loader{}
		var cap string
		ld.Document = func(d *resourcesync.Document) error {
			if c := d.Header.MD.Capability; c != "" {
				cap = c
			}
			return nil
		}
		seen := make([]bool, members) // by member number: a few bytes each
		ld.Entry = func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
			if d.Header.Kind != resourcesync.URLSet {
				return nil
			}
			n, err := strconv.Atoi(u.Loc[len(u.Loc)-6:])
			if err != nil || seen[n] {
				return fmt.Errorf("%s listed twice, or not a member", u.Loc)
			}
			seen[n] = true
			switch cap {
			case resourcesync.CapResourceList:
				listed.Add(1)
				if u.MD != nil && u.MD.Hash == fmt.Sprintf("sha-256:%064x", n) && u.Lastmod.Equal(bigAt) {
					hashed.Add(1)
				}
			case resourcesync.CapChangeList:
				changes.Add(1)
				var o int64
				fmt.Sscanf(u.MD.Hash, "sha-256:%x", &o)
				if o -= 1 << 40; u.MD.Change == resourcesync.ChangeUpdated && b.changed(int(o)) == n {
					changesHashed.Add(1)
					order = append(order, o)
				}
			}
			return nil
		}
		err := ld.Load(ctx, doc)
		return &unpack.Result{}, err
	})

	stopSampling := sampleLiveHeap(50 * time.Millisecond)
	dst := t.TempDir()
	start := time.Now()
	res, fs, notes := syncRun(t, b.srv.URL+"/trs", dst, replica.Options{})
	peak := stopSampling()
	t.Logf("live heap peak +%d MiB, %s", peak>>20, time.Since(start).Round(time.Millisecond))
	if res.Problems() != 0 {
		t.Fatalf("%+v\n%s\n%s", res, problems(fs), strings.Join(notes, "\n"))
	}
	if want := int64(members - events); listed.Load() != want || hashed.Load() != want {
		t.Errorf("the Base's list: %d members, %d with their hash and lastmod; want %d", listed.Load(), hashed.Load(), want)
	}
	if changes.Load() != int64(events) || changesHashed.Load() != int64(events) {
		t.Errorf("the events' list: %d entries, %d with their event's hash; want %d", changes.Load(), changesHashed.Load(), events)
	}
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Fatalf("events not oldest first: order %d after %d", order[i], order[i-1])
		}
	}
	if len(order) == 0 || order[len(order)-1] != int64(events+1) {
		t.Errorf("the events' list does not end with the newest event (order %d)", events+1)
	}
	if p := peak; p > 40<<20 {
		t.Errorf("the live heap grew by %d MiB while rebasing from a Base of %d members", p>>20, members)
	}
}
