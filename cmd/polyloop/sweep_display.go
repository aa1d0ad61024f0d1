package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runstats"
	"github.com/polyloop/polyloop/sweep"
)

// sweepDisplay shows a sweep's progress: a bar redrawn in place on a
// terminal, plain lines every few seconds otherwise, or every event as a
// JSON line on standard output (--json). Notable events (a run that
// failed, a run held elsewhere, a retry, a changed task, a scorer that
// failed, a provider's 429) get a line of their own.
type sweepDisplay struct {
	mu    sync.Mutex
	w     io.Writer // progress: standard error
	out   io.Writer // --json: standard output
	mode  displayMode
	color bool
	every time.Duration
	bar   bool // a bar is drawn on the current line
	last  *sweep.Progress
	err   error // the first write error of --json
	raw   bool  // --raw: outside text is written as it is
}

type displayMode int

const (
	displayQuiet displayMode = iota
	displayPlain
	displayBar
	displayJSON
)

func (a *app) sweepDisplay(f sweepFlags) *sweepDisplay {
	d := &sweepDisplay{w: a.terminalErr(), out: a.machineOut(), mode: displayPlain, every: 5 * time.Second, raw: a.raw}
	switch {
	case f.json:
		d.mode, d.every = displayJSON, time.Second
	case f.quiet:
		d.mode = displayQuiet
	case terminal(d.w) != nil && os.Getenv("TERM") != "" && os.Getenv("TERM") != "dumb":
		d.mode, d.every = displayBar, 200*time.Millisecond
		d.color = useColor(true, os.Getenv)
	}
	return d
}

// event implements sweep.RunOptions.Events.
func (d *sweepDisplay) event(ev sweep.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ev.Progress != nil {
		d.last = ev.Progress
	}
	switch d.mode {
	case displayQuiet:
	case displayJSON:
		if err := writeJSONLine(d.out, ev); err != nil && d.err == nil {
			d.err = err
		}
	default:
		d.text(ev)
	}
}

// text shows an event as text: a line for the notable ones, the counts
// for progress.
func (d *sweepDisplay) text(ev sweep.Event) {
	line := notable(ev)
	if line != "" {
		d.clearBar()
		fmt.Fprintln(d.w, d.outside(line))
	}
	switch {
	case ev.Kind == sweep.EventProgress && d.mode == displayPlain:
		fmt.Fprintln(d.w, progressLine(d.last))
	case d.mode == displayBar && d.last != nil && ev.Kind != sweep.EventSweepFinished:
		d.clearBar()
		fmt.Fprint(d.w, d.barLine(d.last))
		d.bar = true
	}
}

func (d *sweepDisplay) clearBar() {
	if d.bar {
		fmt.Fprint(d.w, "\r\x1b[2K")
		d.bar = false
	}
}

// close ends the display: the bar gives way to a last progress line.
func (d *sweepDisplay) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mode == displayQuiet || d.mode == displayJSON || d.last == nil {
		return
	}
	d.clearBar()
	fmt.Fprintln(d.w, progressLine(d.last))
}

// outside escapes a line holding outside text (a run's error, a task id,
// a scorer's message, a provider's name) as visible does, unless --raw:
// d.w is the stream itself, for the bar's own sequences.
func (d *sweepDisplay) outside(s string) string {
	if d.raw {
		return s
	}
	return visible(s)
}

// notable is the line of an event worth one, or "".
func notable(ev sweep.Event) string {
	run := ev.RunID
	switch ev.Kind {
	case sweep.EventSweepStarted:
		return fmt.Sprintf("sweep: %d outcomes to settle (agents × tasks × epochs)", ev.Progress.Total)
	case sweep.EventRunFailed:
		return fmt.Sprintf("run %s failed: %s", run, causeString(ev.Error))
	case sweep.EventRunHeld:
		return fmt.Sprintf("run %s is held by another live process: left to it", run)
	case sweep.EventRunSuspended:
		return fmt.Sprintf("run %s waits at a gate (polyloop approve / deliver)", run)
	case sweep.EventRetryScheduled:
		return fmt.Sprintf("run %s finished %s: attempt %d (%s) in %s", run, ev.StopReason, ev.Attempt+1, ev.Next, ev.Delay.Round(time.Millisecond))
	case sweep.EventTaskChanged:
		return fmt.Sprintf("task %s: %s", ev.Task, causeString(ev.Error))
	case sweep.EventScoreFailed:
		return fmt.Sprintf("run %s: %s", run, causeString(ev.Error))
	case sweep.EventRateLimited:
		return fmt.Sprintf("provider %s answered 429 (too many requests): its calls pause for %s", ev.Provider, ev.Delay.Round(time.Millisecond))
	}
	return ""
}

// progressLine says the counts on one line.
func progressLine(p *sweep.Progress) string {
	if p == nil {
		return ""
	}
	done := fmt.Sprintf("%d/%d done", p.Done, p.Total)
	if p.Skipped > 0 {
		done += fmt.Sprintf(" (%d before this run)", p.Skipped)
	}
	parts := []string{done, fmt.Sprintf("%d running", p.Running), fmt.Sprintf("%d queued", p.Queued)}
	for _, c := range []struct {
		n    int
		what string
	}{{p.Waiting, "waiting to retry"}, {p.Held, "held elsewhere"}, {p.Failed, "failed"}, {p.Suspended, "at a gate"}, {p.Stopped, "stopped"}, {p.Changed, "task changed"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	s := strings.Join(parts, " · ")
	if stops := stopCounts(p.StopReasons); stops != "" {
		s += " | " + stops
	}
	s += " | " + progressSpend(p)
	if p.ETA > 0 {
		s += " | ETA " + p.ETA.Round(time.Second).String()
	}
	return s
}

// progressSpend is what the finished runs used: "1.23M tokens, $3.4100", or
// "no run finished yet" (no sum at all: never "$0.0000" for a cost not
// known yet).
func progressSpend(p *sweep.Progress) string {
	if p.Runs == 0 {
		return "no run finished yet"
	}
	return humanTokens(p.Tokens, p.TokensUnknown) + ", " + costShort.cost(p.CostUSD, p.CostUnknown)
}

// barLine is the progress with a bar, for a terminal.
func (d *sweepDisplay) barLine(p *sweep.Progress) string {
	const width = 24
	filled := 0
	if p.Total > 0 {
		filled = p.Done * width / p.Total
	}
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	if d.color {
		bar = ansiGreen + bar + ansiReset
	}
	return bar + " " + progressLine(p)
}

// stopCounts is "completed 12 · llm_error 1", in the statistics' order.
func stopCounts(m map[polyloop.StopReason]int) string {
	var parts []string
	for _, r := range runstats.StopReasons {
		if n := m[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, n))
		}
	}
	return strings.Join(parts, " · ")
}

// humanTokens is tokens with the count rounded for a progress line:
// "1.23M tokens", "≥ 1.23M tokens" when some are unknown.
func humanTokens(n int64, unknown bool) string {
	if n == 0 && unknown {
		return "tokens unknown"
	}
	return tokenCell(n, unknown) + " tokens"
}

// tokenCell is a rounded token count for a table's cell: "1.23M", "≥ 1.23M"
// when some are unknown, "unknown" when none is known.
func tokenCell(n int64, unknown bool) string {
	switch {
	case !unknown:
		return humanCount(n)
	case n == 0:
		return "unknown"
	}
	return "≥ " + humanCount(n)
}

// humanCount is a count for people: 950, 12.3k, 4.56M.
func humanCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.3gG", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.3gM", float64(n)/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.3gk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// writeJSONLine prints v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(jsonControls(b), '\n'))
	return err
}
