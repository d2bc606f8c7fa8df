package main

import (
	"fmt"
	"io"
	"slices"
	"time"
)

func median[T int64 | float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

type stats struct {
	wall           time.Duration
	mbps, cpuPerGi float64
	rssMB          int64
	twicePct       float64
	ok, n          int
}

func (b *bench) stats(r result) stats {
	var walls []time.Duration
	var cpus, twice []float64
	var rss []int64
	st := stats{n: len(r.samples)}
	for _, s := range r.samples {
		if s.ok {
			st.ok++
		}
		walls = append(walls, s.wall)
		cpus = append(cpus, s.cpu.Seconds()/(float64(b.size)/(1<<30)))
		rss = append(rss, s.rssKB)
		twice = append(twice, 100*float64(s.served-b.size)/float64(b.size))
	}
	st.wall = median(walls)
	st.mbps = float64(b.size) / mb / st.wall.Seconds()
	st.cpuPerGi, st.rssMB, st.twicePct = median(cpus), median(rss)/1024, median(twice)
	return st
}

// report prints one markdown table row per scenario and tool, with the
// rsdump/aria2c ratio of medians.
func (b *bench) report(w io.Writer) {
	fmt.Fprintf(w, "\nFile: %d MiB random, sha-256 pieces of 1 MiB; %d runs per tool, medians.\n\n", b.size>>20, b.runs)
	fmt.Fprintln(w, "| scenario | tool | ok | wall s | MB/s | % of ceiling | served beyond file % | CPU s/GiB | peak RSS MB | rsdump speed / aria2c |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range b.results {
		st := b.stats(r)
		ceil, ratio := "-", ""
		if r.sc.ceiling > 0 {
			ceil = fmt.Sprintf("%.0f%%", 100*st.mbps/r.sc.ceiling)
		}
		if r.tool == "rsdump" {
			if a, ok := b.find(r.sc.name, "aria2c"); ok {
				ratio = fmt.Sprintf("%.2f×", b.stats(a).wall.Seconds()/st.wall.Seconds())
			}
		}
		fmt.Fprintf(w, "| %s | %s | %d/%d | %.2f | %.1f | %s | %.1f | %.2f | %d | %s |\n", r.sc.name, r.tool, st.ok, st.n,
			st.wall.Seconds(), st.mbps, ceil, st.twicePct, st.cpuPerGi, st.rssMB, ratio)
	}
	fmt.Fprintln(w)
	for _, sc := range scenarios() {
		fmt.Fprintf(w, "- %s: %s\n", sc.name, sc.desc)
	}
}

func (b *bench) find(name, tool string) (result, bool) {
	for _, r := range b.results {
		if r.sc.name == name && r.tool == tool {
			return r, true
		}
	}
	return result{}, false
}
