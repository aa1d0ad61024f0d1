package sweep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop/memstore"
)

// Command scorers run at most MaxScorers at once, whatever the sweep's
// concurrency, and their timeout counts their own time, not the wait for
// a slot: eight runs at once, scorers of 300 ms one at a time (2.4 s in
// all), each with a timeout of 1.5 s, all score.
func TestCommandScorersBoundedByMaxScorers(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace")
	sc, err := Command("cmd", CommandOptions{Dir: dir, Timeout: 1500 * time.Millisecond,
		Args: []string{"sh", "-c", "echo + >> " + trace + "; sleep 0.3; echo - >> " + trace + "; echo '{\"score\": 1}'"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Definition{Name: "slots", Agents: []*Agent{testAgent("a", &faultModel{})}, Tasks: numberTasks(8),
		Concurrency: 8, MaxScorers: 1, Scorers: []Scorer{sc}})
	if err != nil {
		t.Fatal(err)
	}
	var log eventLog
	if _, err := s.Run(context.Background(), RunOptions{Store: memstore.New(), Events: log.add}); err != nil {
		t.Fatal(err)
	}
	for _, ev := range log.all {
		if ev.Kind == EventScoreFailed {
			t.Errorf("%s: %s", ev.RunID, ev.Error)
		}
	}
	if n := log.count(EventRunScored); n != 8 {
		t.Fatalf("%d runs scored, want 8", n)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	at, most := 0, 0
	for _, l := range strings.Fields(string(b)) {
		if l == "+" {
			at++
		} else {
			at--
		}
		most = max(most, at)
	}
	if most != 1 {
		t.Fatalf("%d command scorers ran at once, want at most max_scorers 1:\n%s", most, b)
	}
}

// A command that outlives its timeout is killed, and the error names the
// setting (ErrScorerTimeout, "timeout_ms"); a cancelled context is not a
// timeout.
func TestCommandScorerTimeoutNamesTheSetting(t *testing.T) {
	sc, err := Command("slow", CommandOptions{Args: []string{"sleep", "10"}, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = sc.Score(context.Background(), completed("x"))
	if !errors.Is(err, ErrScorerTimeout) || !strings.Contains(err.Error(), "timeout_ms 50") || !strings.Contains(err.Error(), "scorer slow") {
		t.Fatalf("Score = %v; want ErrScorerTimeout naming timeout_ms 50", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the command was not killed at its timeout: %s", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	sc, _ = Command("slow", CommandOptions{Args: []string{"sleep", "10"}, Timeout: time.Minute})
	if _, err = sc.Score(ctx, completed("x")); errors.Is(err, ErrScorerTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Score with a done context = %v; want the context's error, not ErrScorerTimeout", err)
	}
}
