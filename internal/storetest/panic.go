package storetest

import (
	"context"
	"testing"

	"github.com/polyloop/polyloop"
)

// PanicWhileLeading checks what a store does when writing a batch of
// Appends panics in the caller that leads the batch. The store's test arms
// its write hook first: the batch of run "first" closes started and waits
// until two more Appends are queued; the batch holding run "boom" (with
// "mate") panics with "injected". Then the leader's caller gets the panic;
// the other Append of the batch fails (it is not left waiting); nothing of
// the batch is written; the leadership is handed on, so a later Append is
// committed.
func PanicWhileLeading(t *testing.T, s polyloop.Store, started <-chan struct{}) {
	t.Helper()
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { first <- polyloop.AppendRecords(ctx, s, "first", Started("first", "ag")) }()
	<-started
	results := make(chan appendOutcome, 2)
	for _, run := range []string{"boom", "mate"} {
		go func() {
			results <- tryAppend(func() error { return polyloop.AppendRecords(ctx, s, run, Started(run, "ag")) })
		}()
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	a, b := <-results, <-results
	if a.p == nil {
		a, b = b, a
	}
	if a.p != "injected" || b.p != nil || b.err == nil {
		t.Fatalf("outcomes %+v and %+v, want the injected panic and an error", a, b)
	}
	t.Logf("the other Append: %v", b.err)
	if err := polyloop.AppendRecords(ctx, s, "after", Started("after", "ag")); err != nil {
		t.Fatalf("Append after the panic: %v", err)
	}
	for _, run := range []string{"boom", "mate"} {
		if l, err := polyloop.ReadLog(ctx, s, run); err == nil && len(l.Records) > 0 {
			t.Fatalf("run %s holds %d records, want none", run, len(l.Records))
		}
	}
}

// appendOutcome is what an Append did: returned err, or panicked with p.
type appendOutcome struct {
	err error
	p   any
}

func tryAppend(f func() error) (o appendOutcome) {
	defer func() { o.p = recover() }()
	return appendOutcome{err: f()}
}
