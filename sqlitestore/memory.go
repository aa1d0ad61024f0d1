package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/polyloop/polyloop/memory/memoryport"
)

// The store keeps agent memory beside the run logs, in the same file: it is
// a memoryport.Store and a memoryport.ViewStore. Commits are write transactions on
// the store's write connection (BEGIN IMMEDIATE: one writer at a time, in
// this process and across processes), so a basis check and its write are
// atomic.
var (
	_ memoryport.Store     = (*Store)(nil)
	_ memoryport.ViewStore = (*Store)(nil)
)

// memError wraps a database error of the memory tables, keeping ctx's error
// visible when the call failed because ctx ended.
func memError(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("sqlitestore: %s: %w (%v)", op, cerr, err)
	}
	return fmt.Errorf("sqlitestore: %s: %w", op, err)
}

const entryColumns = `v.namespace, v.key, v.version, v.deleted, v.value, v.run_id, v.step, v.call_id, v.write_id`

type scanner interface{ Scan(dest ...any) error }

func scanEntry(row scanner) (memoryport.Entry, error) {
	var e memoryport.Entry
	var value []byte
	err := row.Scan(&e.Namespace, &e.Key, &e.Version, &e.Deleted, &value, &e.Provenance.RunID, &e.Provenance.Step,
		&e.Provenance.CallID, &e.Provenance.WriteID)
	if len(value) > 0 {
		e.Value = value
	}
	return e, err
}

// LoadEntries implements memoryport.Store.
func (s *Store) LoadEntries(ctx context.Context, namespaces []string) ([]memoryport.Entry, error) {
	if err := s.usable(ctx, "load memory"); err != nil {
		return nil, err
	}
	if len(namespaces) == 0 {
		return nil, nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(namespaces)), ",")
	args := make([]any, len(namespaces))
	for i, ns := range namespaces {
		args[i] = ns
	}
	rows, err := s.read.QueryContext(ctx, `SELECT `+entryColumns+` FROM memory_heads h JOIN memory_versions v
		ON v.namespace = h.namespace AND v.key = h.key AND v.version = h.version
		WHERE h.live = 1 AND h.namespace IN (`+marks+`)`, args...)
	if err != nil {
		return nil, memError(ctx, "load memory", err)
	}
	return scanEntries(ctx, rows, "load memory")
}

func scanEntries(ctx context.Context, rows *sql.Rows, op string) ([]memoryport.Entry, error) {
	defer rows.Close()
	var out []memoryport.Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, memError(ctx, op, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, memError(ctx, op, err)
	}
	return out, nil
}

// headsChunk bounds the entries one EntryHeads query names (two bound
// parameters each).
const headsChunk = 250

// EntryHeads implements memoryport.Store.
func (s *Store) EntryHeads(ctx context.Context, ids []memoryport.EntryID) ([]memoryport.Entry, error) {
	if err := s.usable(ctx, "read memory heads"); err != nil {
		return nil, err
	}
	var out []memoryport.Entry
	for len(ids) > 0 {
		n := min(len(ids), headsChunk)
		args := make([]any, 0, 2*n)
		for _, id := range ids[:n] {
			args = append(args, id.Namespace, id.Key)
		}
		rows, err := s.read.QueryContext(ctx, `SELECT `+entryColumns+` FROM memory_heads h JOIN memory_versions v
			ON v.namespace = h.namespace AND v.key = h.key AND v.version = h.version
			WHERE (h.namespace, h.key) IN (VALUES `+strings.TrimSuffix(strings.Repeat("(?, ?),", n), ",")+`)`, args...)
		if err != nil {
			return nil, memError(ctx, "read memory heads", err)
		}
		got, err := scanEntries(ctx, rows, "read memory heads")
		if err != nil {
			return nil, err
		}
		out, ids = append(out, got...), ids[n:]
	}
	return out, nil
}

// EntryHistory implements memoryport.Store.
func (s *Store) EntryHistory(ctx context.Context, namespace, key string) ([]memoryport.Entry, error) {
	if err := s.usable(ctx, "read memory history"); err != nil {
		return nil, err
	}
	rows, err := s.read.QueryContext(ctx, `SELECT `+entryColumns+` FROM memory_versions v
		WHERE v.namespace = ? AND v.key = ? ORDER BY v.version`, namespace, key)
	if err != nil {
		return nil, memError(ctx, "read memory history", err)
	}
	return scanEntries(ctx, rows, "read memory history")
}

// Namespaces implements memoryport.Store.
func (s *Store) Namespaces(ctx context.Context) ([]string, error) {
	return s.names(ctx, `SELECT DISTINCT namespace FROM memory_heads ORDER BY namespace`, "list namespaces")
}

func (s *Store) names(ctx context.Context, q, op string) ([]string, error) {
	if err := s.usable(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.read.QueryContext(ctx, q)
	if err != nil {
		return nil, memError(ctx, op, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, memError(ctx, op, err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, memError(ctx, op, err)
	}
	return out, nil
}

// LookupWrite implements memoryport.Store.
func (s *Store) LookupWrite(ctx context.Context, writeID string) (memoryport.Commit, bool, error) {
	if err := s.usable(ctx, "look up a memory write"); err != nil {
		return memoryport.Commit{}, false, err
	}
	return lookupWrite(ctx, s.read, writeID)
}

type querier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

func lookupWrite(ctx context.Context, q querier, writeID string) (memoryport.Commit, bool, error) {
	var digest, entries string
	err := q.QueryRowContext(ctx, `SELECT digest, entries FROM memory_writes WHERE write_id = ?`, writeID).Scan(&digest, &entries)
	if errors.Is(err, sql.ErrNoRows) {
		return memoryport.Commit{}, false, nil
	}
	if err != nil {
		return memoryport.Commit{}, false, memError(ctx, "look up a memory write", err)
	}
	c, err := memoryport.DecodeCommit(writeID, digest, []byte(entries))
	if err != nil {
		return memoryport.Commit{}, false, fmt.Errorf("sqlitestore: memory write %q: %w", writeID, err)
	}
	return c, true, nil
}

// CommitWrite implements memoryport.Store: one write transaction checks the
// write id, then the basis against the heads, then writes the versions,
// the heads and the write id.
func (s *Store) CommitWrite(ctx context.Context, w memoryport.Write) (memoryport.Commit, error) {
	if err := s.usable(ctx, "commit memory"); err != nil {
		return memoryport.Commit{}, err
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return memoryport.Commit{}, memError(ctx, "begin memory commit", err)
	}
	defer tx.Rollback()
	digest := memoryport.WriteDigest(w)
	if c, found, err := lookupWrite(ctx, tx, w.ID); err != nil || found {
		if found && c.Digest != digest {
			return memoryport.Commit{}, fmt.Errorf("sqlitestore: write %q: %w", w.ID, memoryport.ErrWriteIDReused)
		}
		c.Replayed = found
		return c, err
	}
	heads, err := checkBasis(ctx, tx, w)
	if err != nil {
		return memoryport.Commit{}, err
	}
	c, err := insertVersions(ctx, tx, w, heads)
	if err != nil {
		return memoryport.Commit{}, err
	}
	c.Digest = digest
	entries, err := memoryport.EncodeCommit(c)
	if err != nil {
		return memoryport.Commit{}, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO memory_writes (write_id, digest, entries) VALUES (?, ?, ?)`, w.ID, digest, string(entries)); err != nil {
		return memoryport.Commit{}, memError(ctx, "record memory write", err)
	}
	if err := tx.Commit(); err != nil {
		return memoryport.Commit{}, memError(ctx, "commit memory", err)
	}
	return c, nil
}

// head is an entry's last version, and whether it is live.
type head struct {
	version int64
	live    bool
}

// checkBasis reads the heads of every entry the write names and refuses a
// basis that does not match them.
func checkBasis(ctx context.Context, tx *sql.Tx, w memoryport.Write) (map[memoryport.EntryID]head, error) {
	heads := map[memoryport.EntryID]head{}
	lines := append(memoryport.Basis(nil), w.Basis...)
	for _, op := range w.Ops {
		lines = append(lines, memoryport.Expect{Namespace: op.Namespace, Key: op.Key, Version: w.Basis.Version(op.ID())})
	}
	for _, e := range lines {
		h, ok := heads[e.ID()]
		if !ok {
			err := tx.QueryRowContext(ctx, `SELECT version, live FROM memory_heads WHERE namespace = ? AND key = ?`, e.Namespace, e.Key).Scan(&h.version, &h.live)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, memError(ctx, "read memory heads", err)
			}
			heads[e.ID()] = h
		}
		if liveVersion(h) != e.Version {
			return nil, fmt.Errorf("sqlitestore: %s is at version %d, the write expects %d: %w", e.ID(), liveVersion(h), e.Version, memoryport.ErrBasisMismatch)
		}
	}
	return heads, nil
}

func liveVersion(h head) int64 {
	if !h.live {
		return 0
	}
	return h.version
}

// insertVersions writes each operation's version after its entry's head.
func insertVersions(ctx context.Context, tx *sql.Tx, w memoryport.Write, heads map[memoryport.EntryID]head) (memoryport.Commit, error) {
	c := memoryport.Commit{WriteID: w.ID}
	p := w.Provenance
	for _, op := range w.Ops {
		v := heads[op.ID()].version + 1
		deleted := op.Kind == memoryport.OpDelete
		var value any
		if !deleted {
			value = []byte(op.Value)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO memory_versions (namespace, key, version, deleted, value, run_id, step, call_id, write_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, op.Namespace, op.Key, v, deleted, value, p.RunID, p.Step, p.CallID, w.ID); err != nil {
			return c, memError(ctx, "write memory version", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO memory_heads (namespace, key, version, live) VALUES (?, ?, ?, ?)
			ON CONFLICT (namespace, key) DO UPDATE SET version = excluded.version, live = excluded.live`, op.Namespace, op.Key, v, !deleted); err != nil {
			return c, memError(ctx, "write memory head", err)
		}
		c.Entries = append(c.Entries, memoryport.EntryVersion{Namespace: op.Namespace, Key: op.Key, Version: v, Deleted: deleted})
	}
	return c, nil
}
