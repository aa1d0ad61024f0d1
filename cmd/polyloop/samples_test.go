package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/polyloop/polyloop/sweep"
)

// polyloop samples: the JSON, CSV and Parquet tables hold the same rows,
// and each row is what the store holds of its run: its ledger entry, its
// log's stop reason and totals, its scores with their explanations.
func TestSamplesFormats(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	if code, _, stderr := c.run("sweep", "sweep.yaml", "-q"); code != exitOK {
		t.Fatal(stderr)
	}
	code, stdout, stderr := c.run("samples", "--sweep", "cli", "--json")
	var s sweep.Samples
	if code != exitOK || json.Unmarshal([]byte(stdout), &s) != nil {
		t.Fatalf("samples --json: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if len(s.Rows) != 20 || strings.Join(s.Scorers, ",") != "exact,near" {
		t.Fatalf("%d rows, scorers %v", len(s.Rows), s.Scorers)
	}
	checkSamplesInStore(t, filepath.Join(c.dir, "store.db"), s)

	code, stdout, _ = c.run("samples", "--sweep", "cli", "--csv")
	recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if code != exitOK || err != nil || len(recs) != 21 {
		t.Fatalf("samples --csv: exit %d, %v\n%s", code, err, stdout)
	}
	pq := filepath.Join(c.dir, "samples.parquet")
	if code, _, stderr := c.run("samples", "--sweep", "cli", "--parquet", pq); code != exitOK || !strings.Contains(stderr, "20 samples written") {
		t.Fatalf("samples --parquet: exit %d\n%s", code, stderr)
	}
	rows, err := parquet.ReadFile[any](pq)
	if err != nil || len(rows) != 20 {
		t.Fatalf("reading the Parquet file back: %d rows, %v", len(rows), err)
	}
	if schema := parquetSchema(t, pq); !strings.Contains(schema, "optional int64 started_at (TIMESTAMP(isAdjustedToUTC=true,unit=MICROS))") ||
		!strings.Contains(schema, "optional double score_exact;") || !strings.Contains(schema, "required binary run_id (STRING);") {
		t.Errorf("Parquet schema:\n%s", schema)
	}
	head := recs[0]
	for i, r := range s.Rows {
		csvRow := map[string]string{}
		for j, col := range head {
			csvRow[col] = recs[i+1][j]
		}
		pqRow := rows[i].(map[string]any)
		if len(pqRow) != len(head) {
			t.Fatalf("Parquet columns %v, CSV %v", pqRow, head)
		}
		for col, want := range sampleCells(r) {
			if csvRow[col] != want {
				t.Errorf("%s: CSV %s = %q, JSON %q", r.RunID, col, csvRow[col], want)
			}
			if col == "started_at" { // Parquet's TIMESTAMP(MICROS), read back as its int64
				want = strconv.FormatInt(r.StartedAt.UnixMicro(), 10)
			}
			if got := cellText(pqRow[col]); got != want {
				t.Errorf("%s: Parquet %s = %q, JSON %q", r.RunID, col, got, want)
			}
		}
	}
}

// parquetSchema is the schema of a Parquet file, as text.
func parquetSchema(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return pf.Schema().String()
}

// sampleCells are a row's cells as CSV writes them.
func sampleCells(r sweep.Sample) map[string]string {
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	cells := map[string]string{"run_id": r.RunID, "agent": r.Agent, "agent_hash": r.AgentHash, "snapshot_hash": r.SnapshotHash,
		"task": r.Task, "epoch": strconv.Itoa(r.Epoch), "attempt": strconv.Itoa(r.Attempt), "last": strconv.FormatBool(r.Last),
		"left_out": strconv.FormatBool(r.LeftOut), "status": r.Status, "stop_reason": string(r.StopReason), "steps": strconv.Itoa(r.Steps),
		"tokens": strconv.FormatInt(r.Tokens, 10), "tokens_unknown": strconv.FormatBool(r.TokensUnknown), "cost_usd": num(r.CostUSD),
		"cost_unknown": strconv.FormatBool(r.CostUnknown), "started_at": r.StartedAt.UTC().Format(time.RFC3339Nano),
		"duration_s": num(r.Duration.Seconds())}
	if r.KnownTokens() == nil {
		cells["tokens"] = ""
	}
	if r.KnownCost() == nil {
		cells["cost_usd"] = ""
	}
	for _, name := range []string{"exact", "near"} {
		cells["score_"+name], cells["explanation_"+name], cells["error_"+name] = "", "", r.ScoreErrors[name]
		if sc, ok := r.Scores[name]; ok {
			cells["score_"+name], cells["explanation_"+name] = num(sc.Value), sc.Explanation
		}
	}
	return cells
}

// cellText is a value read from Parquet as CSV writes it.
func cellText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	}
	return "?"
}

// checkSamplesInStore compares the rows with the store's ledger and logs.
func checkSamplesInStore(t *testing.T, path string, s sweep.Samples) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, r := range s.Rows {
		states, err := st.Runs(ctx, []string{r.RunID})
		if err != nil || len(states) != 1 {
			t.Fatalf("%s: %v", r.RunID, err)
		}
		e := states[0]
		log, err := polyloop.ReadLog(ctx, st, r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		fin := log.Finished()
		if e.Agent != r.Agent || e.TaskID != r.Task || e.Epoch != r.Epoch || e.Attempt != r.Attempt || e.AgentHash != r.AgentHash ||
			fin.StopReason != r.StopReason || fin.Totals.Steps != r.Steps || fin.Totals.Tokens() != r.Tokens ||
			fin.Totals.CostUSD != r.CostUSD || fin.Totals.CostUnknown != r.CostUnknown {
			t.Errorf("%s: row %+v; the store: %+v, finished %+v", r.RunID, r, e.Entry, fin)
		}
		if len(e.Scores) != len(r.Scores) {
			t.Errorf("%s: %d scores, the store has %d", r.RunID, len(r.Scores), len(e.Scores))
		}
		for _, sc := range e.Scores {
			if got := r.Scores[sc.Scorer]; got.Value != sc.Value || got.Explanation != sc.Explanation {
				t.Errorf("%s: %s %+v, the store has %+v", r.RunID, sc.Scorer, got, sc)
			}
		}
	}
}

// The text table and the filters: --failed lists the quick agent's wrong
// answers with the scorer's explanation.
func TestSamplesText(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	if code, _, stderr := c.run("sweep", "sweep.yaml", "-q"); code != exitOK {
		t.Fatal(stderr)
	}
	code, stdout, stderr := c.run("samples", "--sweep", "cli", "--failed", "--sort", "task", "--desc")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 12 || !strings.HasPrefix(lines[0], "AGENT") || !strings.HasPrefix(lines[11], "10 samples") {
		t.Fatalf("samples --failed:\n%s", stdout)
	}
	if f := strings.Fields(lines[1]); f[0] != "quick" || f[1] != "q5" || f[4] != "completed" || f[5] != "0" {
		t.Errorf("first row %q: want quick's q5, completed, exact 0", lines[1])
	}
	// show RUN prints the run's scores with their explanations.
	var id string
	for _, f := range strings.Fields(lines[1]) {
		if strings.HasPrefix(f, "cli.") {
			id = f
		}
	}
	code, stdout, _ = c.run("show", id)
	if code != exitOK || !strings.Contains(stdout, "sweep cli: agent quick (configuration sha256:") ||
		!strings.Contains(stdout, "scores:\n  exact 0\n    equals no target\n  near 1\n    5 is within tolerance of the target 4\n") {
		t.Errorf("show %s: exit %d\n%s", id, code, stdout)
	}
	code, stdout, _ = c.run("samples", "--sweep", "cli", "--scorer", "near", "--below", "1")
	if code != exitOK || !strings.Contains(stdout, "no samples match") {
		t.Errorf("--below 1 on near (every answer within 1): exit %d\n%s", code, stdout)
	}
	for _, bad := range [][]string{{"--sweep", "nope"}, {"--sweep", "cli", "--scorer", "nope"}, {"--sweep", "cli", "--sort", "colour"},
		{"--sweep", "cli", "--json", "--csv"}, {}} {
		if code, _, _ := c.run(append([]string{"samples"}, bad...)...); code != exitError {
			t.Errorf("samples %v: exit %d, want %d", bad, code, exitError)
		}
	}
}
