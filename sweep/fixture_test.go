package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// handRun is one coordinate of a hand-made sweep: the stop reasons of its
// attempts in order ("" for an unfinished run), and the score of the last
// one (nil: unscored).
type handRun struct {
	agent, task string
	epoch       int
	stops       []polyloop.StopReason
	score       *float64
	explanation string
	cost        float64
}

func score(v float64) *float64 { return &v }

// handHash is the agent hash of a hand-made sweep's agent.
func handHash(agent string) string {
	sum := sha256.Sum256([]byte(agent))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// handStore records a sweep name of the agents, epochs and runs given,
// scored by "exact", retried on llm_error up to 3 attempts, in a memstore.
func handStore(t *testing.T, name string, agents []string, epochs int, runs []handRun) *memstore.Store {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	m := Manifest{Name: name, Epochs: epochs, Retry: RetryPolicy{On: DefaultRetryOn, Attempts: 3},
		Scorers: []ScorerManifest{{Name: "exact"}}}
	for _, a := range agents {
		m.Agents = append(m.Agents, AgentManifest{Name: a, Hash: handHash(a)})
	}
	b, _ := json.Marshal(m)
	if err := store.PutSweep(ctx, ledger.Sweep{Name: name, Manifest: b, UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1700000000, 0).UTC()
	for _, r := range runs {
		coord := CoordID(name, handHash(r.agent), r.task, r.epoch)
		for i, stop := range r.stops {
			attempt := i + 1
			e := ledger.Entry{RunID: RunID(coord, attempt), Sweep: name, Coord: coord, Agent: r.agent, AgentHash: handHash(r.agent),
				TaskID: r.task, Epoch: r.epoch, Attempt: attempt, Task: json.RawMessage(`{"id":"` + r.task + `","input":"x"}`), TaskDigest: "d"}
			if attempt > 1 {
				e.Previous = RunID(coord, attempt-1)
			}
			if err := store.AddEntries(ctx, []ledger.Entry{e}); err != nil {
				t.Fatal(err)
			}
			snap := polyloop.Snapshot{Agent: r.agent, Task: polyloop.Task{Input: r.task}}
			h, _ := snap.Hash()
			recs := []polyloop.Record{{Seq: 0, At: at, Body: &polyloop.RunStarted{RunID: e.RunID, Snapshot: snap, SnapshotHash: h, LibraryVersion: polyloop.LibraryVersion}}}
			if stop != "" {
				recs = append(recs, polyloop.Record{Seq: 1, At: at.Add(1500 * time.Millisecond), Body: &polyloop.RunFinished{StopReason: stop,
					Totals: polyloop.Totals{Steps: 2, ModelCalls: 2, InputTokens: 10, OutputTokens: 5, CostUSD: r.cost}}})
			}
			if err := polyloop.AppendRecords(ctx, store, e.RunID, recs...); err != nil {
				t.Fatal(err)
			}
			if attempt == len(r.stops) && r.score != nil {
				s := ledger.Score{RunID: e.RunID, Scorer: "exact", Value: *r.score, Explanation: r.explanation, ScoredAt: at}
				if err := store.PutScores(ctx, []ledger.Score{s}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return store
}
