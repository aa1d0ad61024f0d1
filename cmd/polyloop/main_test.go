package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain makes this test binary serve as the polyloop command (and the
// writelog helper) for the scripts: testscript puts them on PATH.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"polyloop":  main,
		"writelog":  writeLogMain,
		"damagelog": damageLogMain,
		"mcpslow":   mcpSlowMain,
		"mcpadd":    mcpAddMain,
		"procpeek":  procPeekMain,
		"mcppeek":   mcpPeekMain,
	})
}

// TestScripts runs the scripts of testdata: each command as a real
// subprocess.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			env.Setenv("POLYLOOP_STORE", "sqlite:"+env.WorkDir+"/store/polyloop.db")
			env.Setenv("NO_COLOR", "1")
			// For the PostgreSQL script: the DSN, and a suffix that keeps
			// run ids unique in a database shared across test runs.
			env.Setenv("PGDSN", os.Getenv("POLYLOOP_TEST_POSTGRES"))
			env.Setenv("UNIQ", strconv.FormatInt(time.Now().UnixNano(), 36))
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "postgres" {
				return os.Getenv("POLYLOOP_TEST_POSTGRES") != "", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"expectexit": expectExit,
			"cutfile":    cutFile,
			"pgdb":       freshPostgres,
			"fakemodel":  fakeModel,
		},
		RequireExplicitExec: true,
	})
}

// expectExit runs "expectexit CODE COMMAND ARGS..." and checks the exit
// code; stdout and stderr stay available to the next commands.
func expectExit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: expectexit CODE COMMAND [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("expectexit: bad code %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("expectexit: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// writeLogMain is "writelog DB RUN_ID SHAPE": it appends a hand-made log to
// a SQLite store, for the verify and stats scripts. SHAPE is one of
// unfinished (a valid log that stops at a model-call intent), orphan-result
// (a model result without its intent), after-finish (a record after
// run_finished), bad-json (a finished log whose record 2 is not valid JSON,
// written behind the store's back).
func writeLogMain() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: writelog DB RUN_ID unfinished|orphan-result|after-finish|bad-json")
		os.Exit(2)
	}
	if err := writeLog(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "writelog:", err)
		os.Exit(1)
	}
}

func writeLog(db, id, shape string) error {
	st, err := sqlitestore.Open(db, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	recs, err := handmadeLog(id, shape)
	if err != nil {
		return err
	}
	if err := polyloop.AppendRecords(context.Background(), st, id, recs...); err != nil || shape != "bad-json" {
		return err
	}
	if err := st.Close(); err != nil {
		return err
	}
	return breakRecord(db, id, 2)
}

// handmadeLog is the log of a writelog SHAPE (bad-json: the finished log it
// then breaks; finished: that log whole).
func handmadeLog(id, shape string) ([]polyloop.Record, error) {
	snap := polyloop.Snapshot{Agent: "handmade", Task: polyloop.Task{Input: "t"}}
	hash, err := snap.Hash()
	if err != nil {
		return nil, err
	}
	reply := &polyloop.ModelReply{Text: "done", Usage: polyloop.Usage{InputTokens: 5, OutputTokens: 1}}
	bodies := []polyloop.RecordBody{&polyloop.RunStarted{RunID: id, Snapshot: snap, SnapshotHash: hash, LibraryVersion: polyloop.LibraryVersion}}
	switch shape {
	case "unfinished":
		bodies = append(bodies, &polyloop.ModelCallIntent{Step: 1, CallID: "m1.1", Attempt: 1})
	case "orphan-result":
		bodies = append(bodies, &polyloop.ModelCallResult{Step: 1, CallID: "m1.1", Reply: reply})
	case "after-finish", "bad-json", "finished":
		bodies = append(bodies,
			&polyloop.ModelCallIntent{Step: 1, CallID: "m1.1", Attempt: 1},
			&polyloop.ModelCallResult{Step: 1, CallID: "m1.1", Reply: reply},
			&polyloop.StepCompleted{Step: 1, ModelCallID: "m1.1", Decision: polyloop.DecisionFinal, Answer: "done"},
			&polyloop.RunFinished{StopReason: polyloop.StopCompleted, FinalAnswer: "done"})
		if shape == "after-finish" {
			bodies = append(bodies, &polyloop.ModelCallIntent{Step: 2, CallID: "m2.1", Attempt: 1})
		}
	default:
		return nil, fmt.Errorf("unknown shape %q", shape)
	}
	recs := make([]polyloop.Record, len(bodies))
	for i, b := range bodies {
		recs[i] = polyloop.Record{Seq: int64(i), At: time.Now(), Body: b}
	}
	return recs, nil
}

// breakRecord overwrites a stored record with text that is not JSON.
func breakRecord(path, id string, seq int64) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(`UPDATE records SET data = ? WHERE run_id = ? AND seq = ?`, []byte(`{"seq":2,"kind":"model_call_res`), id, seq)
	return err
}
