package view

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/trajectory"
)

// Previews is the seam for model text that streams before its record
// lands: the live page shows a preview of the current attempt of each
// model call under way and drops it when the attempt is superseded.
// Records remain the truth: a model_call_result replaces the preview.
// PreviewSink implements it for the runs of this process.
type Previews interface {
	// Watch delivers the previews of a run until ctx is done; the channel
	// is closed then (or when the source has no more). The first previews
	// bring a new watcher up to date: the text each call under way has so
	// far.
	Watch(ctx context.Context, runID string) (<-chan Preview, error)
}

// Preview is a fragment of a model call's streamed text, the retraction of
// an attempt's text, or the end of the call's preview.
type Preview struct {
	Step   int    `json:"step"`
	CallID string `json:"call_id"`
	// Attempt is the client's attempt (polyloop.Delta.Attempt) the text
	// belongs to; the call id names the library's attempt.
	Attempt int `json:"attempt"`
	// Text is appended to the attempt's preview; a text of another attempt
	// than the one shown replaces it.
	Text string `json:"text,omitempty"`
	// Whole: Text is all of the attempt's text so far, which replaces what
	// is shown (the first text a watcher gets of an attempt: a page that
	// reconnects shows it once, not twice).
	Whole bool `json:"whole,omitempty"`
	// Superseded drops the preview of Attempt — of every attempt of the
	// call when Attempt is 0 —: it will not become the reply.
	Superseded bool `json:"superseded,omitempty"`
	// Ended: the call's result is durable (or the run finished); its
	// record replaces the preview. Ended without a CallID: the run
	// finished.
	Ended bool `json:"ended,omitempty"`
}

// live streams an unfinished run's changes as server-sent events:
//   - "steps": the HTML of every step that changed since the last event
//     (new records), each an element with the step's id;
//   - "status": the HTML of the run's status block;
//   - "preview": a Preview as JSON (with Options.Previews), always after
//     the steps event that holds its call; Ended previews are not sent:
//     they make the stream read the log at once;
//   - "end": the run finished; the stream closes.
//
// The log is read every Options.Poll, and at once when a preview names a
// call the stream has not sent or ends a call or the run. Each records
// event carries the number of records seen as its id, so a reconnecting
// browser (Last-Event-ID) gets only what it lacks; previews carry none,
// and a reconnecting page gets the text of each call under way whole.
// Only the steps of the page's own page of steps (page, as on the run's
// page; absent: the last) are sent. A server holds at most
// Options.MaxStreams streams; one more is refused with 503.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := q.Get("id")
	seq, err := strconv.Atoi(q.Get("seq"))
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		seq, err = strconv.Atoi(last)
	}
	if id == "" || err != nil || seq < 0 {
		s.fail(w, r, http.StatusBadRequest, errors.New("live needs a run and a record count: /live?id=RUN_ID&seq=N"))
		return
	}
	page, err := parsePage(q)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		w.Header().Set("Retry-After", "10")
		s.fail(w, r, http.StatusServiceUnavailable, fmt.Errorf("this server already follows %d live runs (its bound): reload the page later", cap(s.streams)))
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.fail(w, r, http.StatusInternalServerError, errors.New("the connection cannot stream"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	if r.Method == http.MethodHead {
		return
	}
	ctx := r.Context()
	var previews <-chan Preview
	if s.opts.Previews != nil {
		if previews, err = s.opts.Previews.Watch(ctx, id); err != nil {
			s.opts.Logger.Error("polyloop view: previews", "run", id, "error", err)
		}
	}
	f := &follower{s: s, w: w, flusher: flusher, id: id, seq: seq, page: page, calls: map[string]bool{}}
	if f.push(ctx) {
		return
	}
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if f.push(ctx) {
				return
			}
		case p, ok := <-previews:
			if !ok {
				previews = nil
				continue
			}
			// A preview goes after the steps that hold its call (the
			// call's intent is durable before its first delta); an ended
			// call's record is read at once, and replaces the preview.
			if (p.Ended || !f.calls[p.CallID]) && f.push(ctx) {
				return
			}
			if p.Ended {
				continue
			}
			if err := sendPreview(w, p); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// follower is one live stream's state: the records it has sent and the
// model calls they hold.
type follower struct {
	s       *Server
	w       io.Writer
	flusher http.Flusher
	id      string
	seq     int
	page    int
	calls   map[string]bool
	running bool // a live process drove the run at the last push
}

// push sends what changed in the log; stop when the stream must end (the
// run finished, or the log or the connection failed).
func (f *follower) push(ctx context.Context) (stop bool) {
	done, err := f.s.pushRecords(ctx, f.w, f.id, f.page, &f.seq, f.calls, &f.running)
	if err != nil {
		if ctx.Err() == nil {
			f.s.opts.Logger.Error("polyloop view: live", "run", f.id, "error", err)
		}
		return true
	}
	f.flusher.Flush()
	return done
}

// pushRecords reads the log and sends what changed after *seq records in
// page page of its steps, noting the model calls of the run's last step in
// calls (a preview of any other call is pushed after the log is read
// again); done when the run has finished. A run whose live holder came or
// went (*running) gets its status again, though its log did not change.
// The log is folded as it is read (trajectory.BuildPageStream): what a
// push holds is the page, not the log.
func (s *Server) pushRecords(ctx context.Context, w io.Writer, id string, page int, seq *int, calls map[string]bool, running *bool) (done bool, err error) {
	holder, err := trajectory.Holder(ctx, s.opts.Store, id)
	if err != nil {
		return false, err
	}
	changed := (holder != nil) != *running // the last step's open executions read differently
	if *seq > 0 && !changed {
		// A poll of a log that did not grow reads one row at most.
		next, err := s.opts.Store.ReadRowsFrom(ctx, id, int64(*seq), 1)
		if err != nil {
			return false, err
		}
		if len(next) == 0 {
			return false, nil
		}
	}
	t, err := trajectory.BuildPageStream(polyloop.StreamLog(ctx, s.opts.Store, id), trajectory.Page{Number: page, Per: s.opts.StepsPerPage})
	if err != nil {
		return false, err
	}
	clear(calls)
	if l := t.Last(); l != nil {
		for _, c := range l.ModelCalls {
			calls[c.CallID] = true
		}
	}
	if t.Records <= *seq && !changed {
		return false, nil
	}
	*running = holder != nil
	if holder != nil {
		t.MarkRunning(*holder)
	}
	var steps, status bytes.Buffer
	p := newRunPage(t, page, s.opts.StepsPerPage, false)
	last := int64(-1) // the run's last step reads differently when its holder came or went
	if l := t.Last(); changed && l != nil {
		last = l.LastSeq
	}
	for _, st := range p.Steps {
		if st.LastSeq >= int64(*seq) || st.LastSeq == last {
			if err := s.pages.ExecuteTemplate(&steps, "step", stepData{Step: st, Page: p}); err != nil {
				return false, err
			}
		}
	}
	if err := s.pages.ExecuteTemplate(&status, "status", p); err != nil {
		return false, err
	}
	*seq = t.Records
	if err := sendEvent(w, "steps", *seq, steps.String()); err != nil {
		return false, err
	}
	if err := sendEvent(w, "status", *seq, status.String()); err != nil {
		return false, err
	}
	if t.Finished != nil {
		return true, sendEvent(w, "end", *seq, string(t.Finished.StopReason))
	}
	return false, nil
}

// sendEvent writes one event. Its data is split into data lines at every
// line terminator an event stream knows — CRLF, LF and a lone CR — so
// that no text in it can end a line early and start a field of its own (a
// forged end event, a forged id); the browser joins the lines with LF, as
// the HTML parser would read any of the three in the fragment.
func sendEvent(w io.Writer, event string, id int, data string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "event: %s\nid: %d\n", event, id)
	for _, line := range sseLines(data) {
		b.WriteString("data: ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// sseLines splits s at CRLF, LF and lone CR.
func sseLines(s string) []string {
	return strings.Split(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n"), "\n")
}

func sendPreview(w io.Writer, p Preview) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: preview\ndata: %s\n\n", data)
	return err
}

// stepData is what the step template needs: the step and its page.
type stepData struct {
	Step *trajectory.Step
	Page *runPage
}

// Invocations names the invocations that wrote records first to last:
// "invocation #1", "invocations #1–#2".
func (p *runPage) Invocations(first, last int64) string {
	var from, to int
	for i, inv := range p.T.Invocations {
		if first <= inv.LastSeq && last >= inv.FirstSeq {
			if from == 0 {
				from = i + 1
			}
			to = i + 1
		}
	}
	switch {
	case from == 0:
		return ""
	case from == to:
		return fmt.Sprintf("invocation #%d", from)
	}
	return fmt.Sprintf("invocations #%d–#%d", from, to)
}
