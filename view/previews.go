package view

import (
	"context"
	"sync"

	"github.com/polyloop/polyloop"
)

// DefaultMaxPreview bounds the text a PreviewSink keeps of one model call,
// in bytes: the rest of a longer reply appears with its record.
const DefaultMaxPreview = 1 << 20

// PreviewSink keeps the streamed text of the model calls under way in this
// process and gives it to the live pages: it is the event sink of the
// runners whose runs the view previews (a polyloop.DeltaSink that wants
// deltas, so their clients stream) and the Previews of a Server.
//
// It follows the one rule of docs/events.md: it keeps, per run and model
// call, the text of the current client attempt only; it drops that text on
// the attempt's candidate_superseded (every attempt's, when the event names
// the whole call) and forgets the call at its model_call_finished, when the
// record holds the reply; it forgets the run at run_finished, and tells
// its pages (a Preview with Ended and no call). Deltas of two attempts are
// never one text.
//
// Emit never blocks on a page: each watcher is told that something changed
// and reads the state when it is ready, so a slow page sees the text
// coalesced, never out of order, and never stalls a run. PreviewSink is
// safe for concurrent use by any number of runners and pages.
type PreviewSink struct {
	// Max bounds the text kept of one call, in bytes (0: DefaultMaxPreview).
	Max int

	mu   sync.Mutex
	runs map[string]*runPreviews
}

// runPreviews are the calls under way of one run and the pages watching it.
type runPreviews struct {
	calls    map[string]*callPreview
	watchers map[*watcher]struct{}
}

// callPreview is the text of the current client attempt of one call.
type callPreview struct {
	step    int
	attempt int // the client's attempt the text belongs to (Delta.Attempt)
	gen     int // bumped at each new attempt, so a watcher sees the change
	text    []byte
	tool    int // the tool call whose arguments the text ends with; -1 for none
}

// watcher is one page's view of a run: what it was sent of each call, and
// the ends of calls it showed, to tell it.
type watcher struct {
	notify chan struct{}
	shown  map[string]shown
	ends   []Preview
}

type shown struct {
	step, attempt, gen, sent int
}

// NewPreviewSink returns an empty PreviewSink.
func NewPreviewSink() *PreviewSink { return &PreviewSink{} }

// WantsDeltas implements polyloop.DeltaSink: the sink shows deltas.
func (s *PreviewSink) WantsDeltas() bool { return true }

// Emit implements polyloop.EventSink. It never fails.
func (s *PreviewSink) Emit(_ context.Context, ev polyloop.Event) error {
	switch ev.Kind {
	case polyloop.EventModelDelta, polyloop.EventCandidateSuperseded, polyloop.EventModelCallFinished, polyloop.EventRunFinished:
	default:
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	run := s.runs[ev.RunID]
	if run == nil {
		if ev.Kind != polyloop.EventModelDelta {
			return nil
		}
		run = s.run(ev.RunID)
	}
	s.apply(run, ev)
	run.notify()
	s.forget(ev.RunID, run)
	return nil
}

// apply folds one event into a run's previews; s.mu is held.
func (s *PreviewSink) apply(run *runPreviews, ev polyloop.Event) {
	switch ev.Kind {
	case polyloop.EventModelDelta:
		if ev.Delta != nil {
			s.delta(run, ev)
		}
	case polyloop.EventCandidateSuperseded:
		if ev.Delta != nil {
			if c := run.calls[ev.CallID]; c != nil && c.attempt == ev.Delta.Attempt {
				c.text, c.tool, c.gen = c.text[:0], -1, c.gen+1
			}
			break
		}
		run.end(ev.CallID, Preview{Step: ev.Step, CallID: ev.CallID, Superseded: true})
	case polyloop.EventModelCallFinished:
		run.end(ev.CallID, Preview{Step: ev.Step, CallID: ev.CallID, Ended: true})
	case polyloop.EventRunFinished:
		for id, c := range run.calls {
			run.end(id, Preview{Step: c.step, CallID: id, Ended: true})
		}
		for w := range run.watchers {
			w.ends = append(w.ends, Preview{Ended: true})
		}
	}
}

// run is the state of a run, made if need be; s.mu is held.
func (s *PreviewSink) run(id string) *runPreviews {
	if s.runs == nil {
		s.runs = map[string]*runPreviews{}
	}
	run := s.runs[id]
	if run == nil {
		run = &runPreviews{calls: map[string]*callPreview{}, watchers: map[*watcher]struct{}{}}
		s.runs[id] = run
	}
	return run
}

// forget drops a run that has no call under way and no watcher; s.mu is
// held.
func (s *PreviewSink) forget(id string, run *runPreviews) {
	if len(run.calls) == 0 && len(run.watchers) == 0 {
		delete(s.runs, id)
	}
}

// delta appends a delta to its call's text: a delta of a new attempt
// replaces the text of the one before (a client that did not supersede it).
func (s *PreviewSink) delta(run *runPreviews, ev polyloop.Event) {
	d := ev.Delta
	c := run.calls[ev.CallID]
	if c == nil {
		c = &callPreview{step: ev.Step, attempt: d.Attempt, tool: -1}
		run.calls[ev.CallID] = c
	}
	if c.attempt != d.Attempt {
		c.attempt, c.text, c.tool, c.gen = d.Attempt, c.text[:0], -1, c.gen+1
	}
	frag := d.Text
	if d.ToolCallID != "" || d.ToolName != "" || d.Args != "" {
		if c.tool != d.ToolCall {
			c.tool = d.ToolCall
			frag += "\n→ " + d.ToolName + " "
		}
		frag += d.Args
	}
	limit := s.Max
	if limit <= 0 {
		limit = DefaultMaxPreview
	}
	if room := limit - len(c.text); room < len(frag) {
		frag = frag[:max(room, 0)]
	}
	c.text = append(c.text, frag...)
}

// end forgets a call and tells the watchers that showed it; the run's lock
// is held.
func (run *runPreviews) end(callID string, p Preview) {
	delete(run.calls, callID)
	for w := range run.watchers {
		if _, ok := w.shown[callID]; ok {
			delete(w.shown, callID)
			w.ends = append(w.ends, p)
		}
	}
}

// notify wakes every watcher without waiting for any.
func (run *runPreviews) notify() {
	for w := range run.watchers {
		select {
		case w.notify <- struct{}{}:
		default:
		}
	}
}

// Watch implements Previews: the previews of runID's calls from now on —
// first the text each call under way has so far — until ctx is done, when
// the channel is closed. A run this process does not drive gives none.
func (s *PreviewSink) Watch(ctx context.Context, runID string) (<-chan Preview, error) {
	w := &watcher{notify: make(chan struct{}, 1), shown: map[string]shown{}}
	s.mu.Lock()
	s.run(runID).watchers[w] = struct{}{}
	s.mu.Unlock()
	w.notify <- struct{}{}
	out := make(chan Preview)
	go func() {
		defer close(out)
		defer s.unwatch(runID, w)
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.notify:
			}
			for _, p := range s.changes(runID, w) {
				select {
				case out <- p:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

func (s *PreviewSink) unwatch(runID string, w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if run := s.runs[runID]; run != nil {
		delete(run.watchers, w)
		s.forget(runID, run)
	}
}

// changes are the previews that bring a watcher up to date, in order: the
// ends of the calls it showed, then per call under way the drop of an
// attempt it showed that is no longer current, and the text it lacks.
func (s *PreviewSink) changes(runID string, w *watcher) []Preview {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := w.ends
	w.ends = nil
	run := s.runs[runID]
	if run == nil {
		return out
	}
	for id, c := range run.calls {
		sh, ok := w.shown[id]
		if ok && sh.gen != c.gen {
			out = append(out, Preview{Step: c.step, CallID: id, Attempt: sh.attempt, Superseded: true})
			ok = false
		}
		if !ok {
			sh = shown{step: c.step, attempt: c.attempt, gen: c.gen}
		}
		if len(c.text) > sh.sent {
			out = append(out, Preview{Step: c.step, CallID: id, Attempt: c.attempt, Text: string(c.text[sh.sent:]), Whole: sh.sent == 0})
			sh.sent = len(c.text)
		}
		if sh.sent > 0 {
			w.shown[id] = sh
		} else {
			delete(w.shown, id)
		}
	}
	return out
}
