package view_test

import (
	"context"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/view"
)

// pacedModel is a streaming model the test paces: a call plays the beats
// the test gives it one by one — deltas to deliver, then the reply — so
// that the test can look at the page between them, while the call is
// under way and its reply is not recorded.
type pacedModel struct{ beats chan beat }

type beat struct {
	deltas []polyloop.Delta
	reply  *polyloop.ModelReply
	done   chan struct{}
}

func newPacedModel() *pacedModel { return &pacedModel{beats: make(chan beat)} }

// Describe implements polyloop.Describer.
func (*pacedModel) Describe() polyloop.Component { return polyloop.Component{Name: "paced"} }

// Complete implements polyloop.ModelClient; the runner streams (its sink
// wants deltas), so the tests never come here unless that breaks.
func (m *pacedModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	return m.Stream(ctx, req, func(polyloop.Delta) {})
}

// Stream implements polyloop.StreamingModelClient.
func (m *pacedModel) Stream(ctx context.Context, req polyloop.ModelRequest, deltas func(polyloop.Delta)) (polyloop.ModelReply, error) {
	for {
		select {
		case <-ctx.Done():
			return polyloop.ModelReply{}, ctx.Err()
		case b := <-m.beats:
			for _, d := range b.deltas {
				deltas(d)
			}
			close(b.done)
			if b.reply != nil {
				return *b.reply, nil
			}
		}
	}
}

// send plays deltas in the call under way and returns once the sinks have
// had them.
func (m *pacedModel) send(t *testing.T, ds ...polyloop.Delta) {
	t.Helper()
	b := beat{deltas: ds, done: make(chan struct{})}
	m.beats <- b
	<-b.done
}

// answer ends the call under way with a reply of text.
func (m *pacedModel) answer(t *testing.T, text string) {
	t.Helper()
	b := beat{reply: &polyloop.ModelReply{Text: text, Model: "paced", Usage: polyloop.Usage{InputTokens: 7, OutputTokens: 2}, Attempts: 2}, done: make(chan struct{})}
	m.beats <- b
	<-b.done
}

// startPacedRun runs runfixture's agent with m on st in the background,
// its events going to previews; the returned channel gives the run's
// error when it returns.
func startPacedRun(st polyloop.Store, m *pacedModel, previews *view.PreviewSink, id string) <-chan error {
	r := &polyloop.Runner{Model: m, Parser: runfixture.Parser{}, Executor: runfixture.Executor(), Store: st, Sinks: []polyloop.EventSink{previews}}
	errc := make(chan error, 1)
	go func() {
		_, err := r.Run(context.Background(), id, runfixture.Agent("alpha", "You answer."), polyloop.Task{Input: "Greet the world."})
		errc <- err
	}()
	return errc
}
