package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep"
)

func TestSweepProgressLine(t *testing.T) {
	t.Parallel()
	p := &sweep.Progress{Total: 600, Done: 312, Skipped: 12, Running: 8, Queued: 270, Waiting: 10,
		StopReasons: map[polyloop.StopReason]int{polyloop.StopCompleted: 290, polyloop.StopLLMError: 22},
		Runs:        312, Tokens: 1234567, TokensUnknown: true, CostUSD: 3.41, CostUnknown: true, ETA: 252*time.Second + 300*time.Millisecond}
	want := "312/600 done (12 before this run) · 8 running · 270 queued · 10 waiting to retry | completed 290 · llm_error 22 | ≥ 1.23M tokens, ≥ $3.4100 | ETA 4m12s"
	if got := progressLine(p); got != want {
		t.Errorf("progress line\n%s\nwant\n%s", got, want)
	}
	d := &sweepDisplay{w: &bytes.Buffer{}, mode: displayBar}
	if bar := d.barLine(p); !strings.HasPrefix(bar, strings.Repeat("█", 12)+strings.Repeat("░", 12)+" 312/600") {
		t.Errorf("bar %q", bar)
	}
	none := &sweep.Progress{Total: 4, StopReasons: map[polyloop.StopReason]int{}}
	if got := progressLine(none); got != "0/4 done · 0 running · 0 queued | no run finished yet" {
		t.Errorf("at the start: %q", got)
	}
	unpriced := &sweep.Progress{Total: 4, Done: 1, StopReasons: map[polyloop.StopReason]int{polyloop.StopLLMError: 1}, Runs: 1, CostUnknown: true}
	if got := progressLine(unpriced); got != "1/4 done · 0 running · 0 queued | llm_error 1 | 0 tokens, unknown" {
		t.Errorf("after a run of an unpriced model: %q", got)
	}
}

// On a terminal the bar is redrawn in place and a notable event gets a
// line of its own above it.
func TestSweepDisplayOnATerminal(t *testing.T) {
	t.Parallel()
	var w bytes.Buffer
	d := &sweepDisplay{w: &w, mode: displayBar}
	p := &sweep.Progress{Total: 2, StopReasons: map[polyloop.StopReason]int{}}
	d.event(sweep.Event{Kind: sweep.EventProgress, Progress: p})
	d.event(sweep.Event{Kind: sweep.EventRunHeld, RunID: "r1"})
	d.close()
	got := w.String()
	if !strings.Contains(got, "\r\x1b[2Krun r1 is held by another live process: left to it\n") || !strings.HasSuffix(got, "\r\x1b[2K0/2 done · 0 running · 0 queued | no run finished yet\n") {
		t.Errorf("terminal output %q", got)
	}
}

// The sweep's progress shows outside text — a run's error, a task's id, a
// scorer's message, a provider's name — escaped, as the rest of the
// command line does, on a terminal and in plain lines alike (the display
// writes to the stream itself, for the bar's own sequences); --raw leaves
// it as it is.
func TestSweepDisplayEscapesOutsideText(t *testing.T) {
	t.Parallel()
	const evil = "\x1b]52;c;SGVsbG8=\a\r\x1b[2Kforged\u202e"
	events := []sweep.Event{
		{Kind: sweep.EventRunFailed, RunID: "r1", Error: "model said " + evil},
		{Kind: sweep.EventTaskChanged, Task: "t" + evil, Error: "changed " + evil},
		{Kind: sweep.EventScoreFailed, RunID: "r2", Error: "scorer cmd: " + evil},
		{Kind: sweep.EventRateLimited, Provider: "p" + evil},
		{Kind: sweep.EventRetryScheduled, RunID: "r3", StopReason: polyloop.StopLLMError, Next: "r3" + evil},
	}
	for _, mode := range []displayMode{displayPlain, displayBar} {
		var w bytes.Buffer
		d := &sweepDisplay{w: &w, mode: mode}
		for _, ev := range events {
			d.event(ev)
		}
		got := strings.ReplaceAll(w.String(), "\r\x1b[2K", "") // the bar's own
		if i := firstHidden(got); i < len(got) {
			t.Errorf("mode %d: a control character reached the terminal at %d:\n%q", mode, i, got)
		}
		if strings.Count(got, `\x1b]52;c;SGVsbG8=\x07\r\x1b[2Kforged\u202e`) != 6 {
			t.Errorf("mode %d: the escapes are not shown:\n%s", mode, got)
		}
	}
	var w bytes.Buffer
	d := &sweepDisplay{w: &w, mode: displayPlain, raw: true}
	d.event(events[0])
	if !strings.Contains(w.String(), evil) {
		t.Errorf("--raw: %q", w.String())
	}
}
