package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/rogpeppe/go-internal/testscript"
)

// damageLogMain is "damagelog STORE RUN_ID SHAPE": it appends a finished
// hand-made log of five records (see handmadeLog) to the store a --store
// value names, then damages it behind the store's back:
//
//	flipped       "done" becomes "dOne" in record 3, checksum kept
//	unchecked     no record keeps a checksum (as written before checksums)
//	invalid-utf8  unchecked, and record 3 holds a byte that is not UTF-8
//	truncated     record 2 cut to half its bytes, checksum kept
//	swapped       records 2 and 3 exchange places
//	gap           record 2 deleted
//	v3            record 3 says major version 3 (with a checksum of its own)
//	no-version    record 3 has no version field (with a checksum of its own)
func damageLogMain() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: damagelog STORE RUN_ID SHAPE")
		os.Exit(2)
	}
	if err := damageLog(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "damagelog:", err)
		os.Exit(1)
	}
}

func damageLog(spec, id, shape string) error {
	ctx := context.Background()
	st, err := openStore(ctx, spec, createStore)
	if err != nil {
		return err
	}
	recs, err := handmadeLog(id, "finished")
	if err == nil {
		err = polyloop.AppendRecords(ctx, st, id, recs...)
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	raw, err := openRawRecords(ctx, spec)
	if err != nil {
		return err
	}
	defer raw.close()
	return damage(raw, id, shape)
}

func damage(raw *rawRecords, id, shape string) error {
	edit := func(seq int64, keepCRC bool, f func([]byte) []byte) error {
		data, crc, err := raw.get(id, seq)
		if err != nil {
			return err
		}
		data = f(data)
		if !keepCRC {
			c := int64(storetest.Checksum(data))
			crc = &c
		}
		return raw.put(id, seq, data, crc)
	}
	replace := func(old, new string) func([]byte) []byte {
		return func(b []byte) []byte { return bytes.Replace(b, []byte(old), []byte(new), 1) }
	}
	switch shape {
	case "flipped":
		return edit(3, true, replace(`"answer":"done"`, `"answer":"dOne"`))
	case "unchecked":
		return raw.exec(`UPDATE {records} SET crc = NULL WHERE run_id = $1`, id)
	case "invalid-utf8":
		if err := raw.exec(`UPDATE {records} SET crc = NULL WHERE run_id = $1`, id); err != nil {
			return err
		}
		return edit(3, true, replace(`"answer":"done"`, "\"answer\":\"d\xffne\""))
	case "truncated":
		return edit(2, true, func(b []byte) []byte { return b[:len(b)/2] })
	case "swapped":
		return raw.swap(id, 2, 3)
	case "gap":
		return raw.exec(`DELETE FROM {records} WHERE run_id = $1 AND seq = 2`, id)
	case "v3":
		return edit(3, false, replace(`,"v":1,`, `,"v":4,`))
	case "no-version":
		return edit(3, false, replace(`,"v":1,`, `,`))
	}
	return fmt.Errorf("unknown shape %q", shape)
}

// rawRecords is the records table of a store, reached behind its back.
type rawRecords struct {
	sqlite *sql.DB
	pg     *pgx.Conn
}

func openRawRecords(ctx context.Context, spec string) (*rawRecords, error) {
	if path, ok := strings.CutPrefix(spec, "sqlite:"); ok {
		db, err := sql.Open("sqlite", path)
		return &rawRecords{sqlite: db}, err
	}
	conn, err := pgx.Connect(ctx, spec)
	return &rawRecords{pg: conn}, err
}

func (r *rawRecords) close() {
	if r.sqlite != nil {
		r.sqlite.Close()
	} else {
		r.pg.Close(context.Background())
	}
}

// exec runs q with {records} naming the table and $n placeholders.
func (r *rawRecords) exec(q string, args ...any) error {
	if r.sqlite != nil {
		q = strings.ReplaceAll(q, "{records}", "records")
		for i := len(args); i >= 1; i-- {
			q = strings.ReplaceAll(q, "$"+strconv.Itoa(i), "?"+strconv.Itoa(i))
		}
		_, err := r.sqlite.Exec(q, args...)
		return err
	}
	_, err := r.pg.Exec(context.Background(), strings.ReplaceAll(q, "{records}", "polyloop.records"), args...)
	return err
}

func (r *rawRecords) get(id string, seq int64) ([]byte, *int64, error) {
	var data []byte
	var crc *int64
	var err error
	if r.sqlite != nil {
		err = r.sqlite.QueryRow(`SELECT data, crc FROM records WHERE run_id = ? AND seq = ?`, id, seq).Scan(&data, &crc)
	} else {
		err = r.pg.QueryRow(context.Background(), `SELECT data, crc FROM polyloop.records WHERE run_id = $1 AND seq = $2`, id, seq).Scan(&data, &crc)
	}
	return data, crc, err
}

func (r *rawRecords) put(id string, seq int64, data []byte, crc *int64) error {
	return r.exec(`UPDATE {records} SET data = $1, crc = $2 WHERE run_id = $3 AND seq = $4`, data, crc, id, seq)
}

// swap exchanges the contents (kind, data, checksum) of two records.
func (r *rawRecords) swap(id string, a, b int64) error {
	for _, move := range [][2]int64{{a, -1}, {b, a}, {-1, b}} {
		if err := r.exec(`UPDATE {records} SET seq = $1 WHERE run_id = $2 AND seq = $3`, move[1], id, move[0]); err != nil {
			return err
		}
	}
	return nil
}

// cutFile is "cutfile PATH PERCENT": it cuts the file to PERCENT of its
// size, as a crash of the disk or a copy cut short would.
func cutFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: cutfile PATH PERCENT")
	}
	pct, err := strconv.Atoi(strings.TrimSuffix(args[1], "%"))
	if err != nil || pct < 0 || pct > 100 {
		ts.Fatalf("cutfile: bad percentage %q", args[1])
	}
	path := ts.MkAbs(args[0])
	fi, err := os.Stat(path)
	ts.Check(err)
	ts.Check(os.Truncate(path, fi.Size()*int64(pct)/100))
}

// freshPostgres is "pgdb": it creates a database of its own on the test
// server, dropped when the script ends, and sets PGSTORE to its DSN, so
// that verify --all sees only the script's runs.
func freshPostgres(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: pgdb")
	}
	base := os.Getenv("POLYLOOP_TEST_POSTGRES")
	u, err := url.Parse(base)
	ts.Check(err)
	name := "polyloop_script_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	ts.Check(err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	ts.Check(err)
	ts.Defer(func() {
		conn, err := pgx.Connect(ctx, base)
		if err == nil {
			conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			conn.Close(ctx)
		}
	})
	u.Path = "/" + name
	ts.Setenv("PGSTORE", u.String())
}

// fakeModel is "fakemodel AGENT_FILE ARGS_DEPTH": it serves an
// OpenAI-compatible API for the rest of the script whose first reply calls
// tool f with arguments nested ARGS_DEPTH arrays deep and whose later
// replies say "done", and writes an agent file that uses it.
func fakeModel(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: fakemodel AGENT_FILE ARGS_DEPTH")
	}
	depth, err := strconv.Atoi(args[1])
	ts.Check(err)
	deep := strings.Repeat("[", depth) + strings.Repeat("]", depth)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg := map[string]any{"role": "assistant", "content": "done"}
		if calls.Add(1) == 1 {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "f", "arguments": deep}}}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	ts.Defer(srv.Close)
	agent := fmt.Sprintf("name: deep\nmodel: {provider: openai, model: m, base_url: %q}\nlimits: {max_steps: 5}\n", srv.URL+"/v1/")
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(agent), 0o644))
}
