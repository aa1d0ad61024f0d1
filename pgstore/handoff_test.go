package pgstore

import (
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
)

// TestHandOffSkipsALeadingCaller: a caller that enqueue made a leader is
// not handed the leadership a second time by another leader finishing in
// between (its done channel holds one message: a second token there would
// block its own outcome, and with it the Store). The interleaving is played
// by hand: enqueue (lead), another leader's handOff, then lead.
func TestHandOffSkipsALeadingCaller(t *testing.T) {
	s := openWith(t, Options{MaxGroups: 2})
	s.c.leaders = 1 // another leader, committing
	req := mustRequest(t, s, "r", []polyloop.Record{storetest.Started("r", "ag")}, &polyloop.RunSummary{})
	req.state.Store(pending) // as Append makes it
	if !s.enqueue(req) {
		t.Fatal("enqueue: with one of two leaders under way, the caller leads")
	}
	s.handOff() // the other leader is done
	led := make(chan struct{})
	go func() { s.lead(req); close(led) }()
	select {
	case <-led:
	case <-time.After(30 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("lead blocked answering its own request: the hand-off gave the leading caller a second token")
	}
	if err := <-req.done; err != nil {
		t.Fatalf("the Append's outcome: %v", err)
	}
	if s.c.leaders != 0 {
		t.Fatalf("%d leaders left, want 0", s.c.leaders)
	}
	if l, err := polyloop.ReadLog(t.Context(), s, "r"); err != nil || len(l.Records) != 1 {
		t.Fatalf("the log: %d records, %v", len(l.Records), err)
	}
}
