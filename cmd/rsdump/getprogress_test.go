package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/transfer"
)

func TestGetProgressFrames(t *testing.T) {
	pr := transfer.Progress{Total: 100 << 20, Done: 50 << 20, Received: 52 << 20, Mirrors: []transfer.MirrorProgress{
		{Host: "a:80", Active: 4, Received: 30 << 20, State: "active"},
		{Host: "b:80", Received: 22 << 20, State: "dropped"}}}
	var plain bytes.Buffer
	p := newGetProgress(&plain, false)
	p.draw(pr, false)
	if s := plain.String(); !strings.Contains(s, " 50% 50.0 MiB / 100.0 MiB") || strings.Contains(s, "\x1b") || strings.Count(s, "\n") != 1 {
		t.Errorf("plain frame %q", s)
	}
	var tty bytes.Buffer
	p = newGetProgress(&tty, false)
	p.tty = true
	p.draw(pr, false)
	p.draw(pr, false)
	s := tty.String()
	if !strings.Contains(s, "a:80") || !strings.Contains(s, "dropped") || !strings.Contains(s, "\x1b[3A\x1b[J") {
		t.Errorf("tty frames %q", s)
	}
	p.message("rsdump: note")
	if !strings.HasSuffix(tty.String(), "\x1b[3A\x1b[Jrsdump: note\n") {
		t.Errorf("message did not erase the frame: %q", tty.String())
	}
	var quiet bytes.Buffer
	q := newGetProgress(&quiet, true)
	q.event(&transfer.MirrorDropped{File: "f", URL: "u", Reason: "r"})
	if quiet.Len() != 0 {
		t.Errorf("quiet printed %q", quiet.String())
	}
}
