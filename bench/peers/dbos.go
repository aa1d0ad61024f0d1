package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite"
	"github.com/polyloop/polyloop/bench"
)

// dbosReply is a model call's result as a DBOS step records it.
type dbosReply struct {
	Text      string         `json:"text"`
	ToolCalls []dbosToolCall `json:"tool_calls,omitempty"`
}

type dbosToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// dbosMessage is one message of the history the workflow keeps.
type dbosMessage struct {
	Role, Content string
	ToolCalls     []dbosToolCall
}

// prepareDBOS is W as a DBOS Transact workflow: each model call and each
// noop execution is a step (dbos.RunAsStep), whose result DBOS records in
// its system database before the workflow goes on — its durability, which
// PolyLoop's log gives with an intent before each call and action and a
// result after. The workflow keeps the history in memory and gives it to
// the scripted model, as an agent loop does. The system database is the
// place: a SQLite file, or a schema of the PostgreSQL database.
func prepareDBOS(ctx context.Context, w bench.Workload, p *place) (prepared, error) {
	cfg := dbos.Config{AppName: "peers-w", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	closeDB := func() error { return nil }
	switch p.kind {
	case kindSQLite:
		// DBOS's own SQLite pool sets synchronous=NORMAL, which does not
		// sync a commit to disk (in WAL mode a power loss may take the last
		// commits): a cheaper promise than PolyLoop's synchronous=FULL. So
		// DBOS gets a handle of the same settings as its own pool but FULL.
		db, err := sql.Open("sqlite", "file:"+p.path+"?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=foreign_keys(ON)"+
			"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
		if err != nil {
			return prepared{}, err
		}
		db.SetMaxOpenConns(8)
		cfg.SQLiteSystemDB, closeDB = db, db.Close
	case kindPostgres:
		cfg.DatabaseURL, cfg.DatabaseSchema = p.dsn, p.schema
	}
	dctx, err := dbos.NewContext(ctx, cfg)
	if err != nil {
		closeDB()
		return prepared{}, err
	}
	dbos.RegisterWorkflow(dctx, dbosW)
	if err := dbos.Launch(dctx); err != nil {
		dbos.Shutdown(dctx, 5*time.Second)
		closeDB()
		return prepared{}, err
	}
	return prepared{
		run: func(context.Context) error {
			h, err := dbos.RunWorkflow(dctx, dbosW, w.Steps)
			if err != nil {
				return err
			}
			answer, err := h.GetResult()
			if err != nil {
				return err
			}
			if answer != bench.FinalAnswer {
				return fmt.Errorf("dbos: the workflow answered %q, want %q", answer, bench.FinalAnswer)
			}
			return nil
		},
		close: func() error { dbos.Shutdown(dctx, 5*time.Second); return closeDB() },
	}, nil
}

// dbosW is W's loop as a workflow of steps: steps model calls with one
// noop call each, then the answer.
func dbosW(ctx dbos.Context, steps int) (string, error) {
	history := []dbosMessage{{Role: "user", Content: bench.Workload{}.Task().Input}}
	for {
		reply, err := dbos.RunAsStep(ctx, func(context.Context) (dbosReply, error) { return dbosModel(history, steps) }, dbos.WithStepName("model"))
		if err != nil {
			return "", err
		}
		history = append(history, dbosMessage{Role: "assistant", Content: reply.Text, ToolCalls: reply.ToolCalls})
		if len(reply.ToolCalls) == 0 {
			return reply.Text, nil
		}
		obs, err := dbos.RunAsStep(ctx, func(context.Context) (string, error) { return bench.ToolResult, nil }, dbos.WithStepName("noop"))
		if err != nil {
			return "", err
		}
		history = append(history, dbosMessage{Role: "tool", Content: obs})
	}
}

// dbosModel answers as W's scripted model: the reply to a history with n
// assistant messages is W's reply n+1.
func dbosModel(history []dbosMessage, steps int) (dbosReply, error) {
	n := 0
	for _, m := range history {
		if m.Role == "assistant" {
			n++
		}
	}
	if n >= steps {
		return dbosReply{Text: bench.FinalAnswer}, nil
	}
	args, err := json.Marshal(map[string]any{"i": n + 1, "note": bench.Note})
	if err != nil {
		return dbosReply{}, err
	}
	return dbosReply{Text: bench.ReplyText, ToolCalls: []dbosToolCall{{ID: "call_" + strconv.Itoa(n+1), Name: "noop", Args: args}}}, nil
}
