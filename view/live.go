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

	"github.com/polyloop/polyloop/internal/trajectory"
)

// Previews is the seam for model text that streams before its record
// lands (the streaming issue): the live page shows a preview of the
// current attempt of each model call and drops it when the attempt is
// superseded. Records remain the truth: a model_call_result replaces the
// preview.
type Previews interface {
	// Watch delivers the previews of a run until ctx is done; the channel
	// is closed then (or when the source has no more).
	Watch(ctx context.Context, runID string) (<-chan Preview, error)
}

// Preview is one delta of streamed model text, or the retraction of an
// attempt's deltas.
type Preview struct {
	Step    int    `json:"step"`
	CallID  string `json:"call_id"`
	Attempt int    `json:"attempt"`
	// Text is the delta, appended to the attempt's preview.
	Text string `json:"text,omitempty"`
	// Superseded drops the attempt's preview: it will not become the reply.
	Superseded bool `json:"superseded,omitempty"`
}

// live streams an unfinished run's changes as server-sent events:
//   - "steps": the HTML of every step that changed since the last event
//     (new records), each an element with the step's id;
//   - "status": the HTML of the run's status block;
//   - "preview": a Preview as JSON (with Options.Previews);
//   - "end": the run finished; the stream closes.
//
// Each records event carries the number of records seen as its id, so a
// reconnecting browser (Last-Event-ID) gets only what it lacks.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	seq, err := strconv.Atoi(r.URL.Query().Get("seq"))
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		seq, err = strconv.Atoi(last)
	}
	if id == "" || err != nil || seq < 0 {
		s.fail(w, r, http.StatusBadRequest, errors.New("live needs a run and a record count: /live?id=RUN_ID&seq=N"))
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
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	for {
		done, err := s.pushRecords(ctx, w, id, &seq)
		if err != nil {
			if ctx.Err() == nil {
				s.opts.Logger.Error("polyloop view: live", "run", id, "error", err)
			}
			return
		}
		flusher.Flush()
		if done {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case p, ok := <-previews:
			if !ok {
				previews = nil
				continue
			}
			if err := sendPreview(w, p); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// pushRecords reads the log and sends what changed after *seq records;
// done when the run has finished.
func (s *Server) pushRecords(ctx context.Context, w io.Writer, id string, seq *int) (done bool, err error) {
	log, err := s.opts.Store.ReadLog(ctx, id)
	if err != nil {
		return false, err
	}
	if len(log.Records) <= *seq {
		return false, nil
	}
	log.RunID = id
	t := trajectory.Build(log)
	var steps, status bytes.Buffer
	p := newRunPage(t)
	for _, st := range t.Steps {
		if st.LastSeq >= int64(*seq) {
			if err := s.pages.ExecuteTemplate(&steps, "step", stepData{Step: st, Page: p}); err != nil {
				return false, err
			}
		}
	}
	if err := s.pages.ExecuteTemplate(&status, "status", p); err != nil {
		return false, err
	}
	*seq = len(log.Records)
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

// sendEvent writes one event; a multi-line data field is split into data
// lines, which the browser joins with newlines.
func sendEvent(w io.Writer, event string, id int, data string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "event: %s\nid: %d\n", event, id)
	for _, line := range strings.Split(data, "\n") {
		b.WriteString("data: ")
		b.WriteString(strings.TrimSuffix(line, "\r"))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
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
