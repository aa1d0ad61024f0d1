package polyloop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// deepArgsParser decides one action whose arguments are nested beyond
// MaxJSONDepth: the loop refuses the decision (ErrInvalidDecision, which
// wraps a *JSONLimitError).
type deepArgsParser struct{}

func (deepArgsParser) Parse(polyloop.ModelReply) polyloop.Decision {
	n := polyloop.MaxJSONDepth + 1
	args := `{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	return polyloop.Act{Actions: []polyloop.Action{{CallID: "c1", Tool: "echo", Args: []byte(args)}}}
}

// A run whose first write landed is started, whatever error ends the
// invocation — even one that wraps ErrJSONLimit (a decision beyond the
// limits), which must not be taken for the first Append's refusal.
func TestStartedRunWithALimitErrorIsStarted(t *testing.T) {
	store := memstore.New()
	r := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Reply("x")), Parser: deepArgsParser{}, Executor: newTestExec(), Store: store}
	_, err := r.Run(context.Background(), "deep", testAgent(), polyloop.Task{Input: "t"})
	if err == nil || !errors.Is(err, polyloop.ErrJSONLimit) {
		t.Fatalf("err = %v, want the decision's limit error", err)
	}
	if errors.Is(err, polyloop.ErrRunNotStarted) || store.Len() == 0 {
		t.Fatalf("err = %v with %d records stored: the run had started", err, store.Len())
	}
}

// A new run that takes a dead holder's lease and is cancelled before its
// first model call writes nothing: the take-over alone is no fact of the
// run (nothing of it happened), so the run is not started.
func TestCancelledStartAfterTakeOverWritesNothing(t *testing.T) {
	store := memstore.New()
	dead := takeLease(t, store, "fresh", "tok-dead")
	store.AbandonLease(dead)
	ctx, cancel := context.WithCancel(context.Background())
	// Cancelled when Run reads the log, after it took the lease.
	_, err := newRunner(scriptmodel.New(scriptmodel.Reply("a")), cancelOnRead{store, cancel}, newTestExec()).Run(ctx, "fresh", testAgent(), polyloop.Task{Input: "t"})
	if !errors.Is(err, polyloop.ErrRunNotStarted) || store.Len() != 0 {
		l, _ := polyloop.ReadLog(context.Background(), store, "fresh")
		t.Fatalf("err = %v, %d records (%v): want ErrRunNotStarted and nothing written", err, store.Len(), kindsOf(l))
	}
}

func kindsOf(l polyloop.RunLog) []polyloop.RecordKind {
	var ks []polyloop.RecordKind
	for _, r := range l.Records {
		ks = append(ks, r.Kind())
	}
	return ks
}
