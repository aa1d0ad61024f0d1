package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop/memory/memoryport"
)

// The store keeps agent memory beside the run logs, in the same schema: it
// is a memoryport.Store and a memoryport.ViewStore. A commit locks the heads of the
// entries it names (inserting absent ones first), in one order, so that its
// basis check and its write are one compare-and-set across any number of
// machines; a view commit takes a transaction-scoped advisory lock on the
// view.
var (
	_ memoryport.Store     = (*Store)(nil)
	_ memoryport.ViewStore = (*Store)(nil)
)

// memError wraps a database error of the memory tables (a unique violation
// there is no sequence conflict), keeping ctx's error visible.
func memError(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("pgstore: %s: %w (%v)", op, cerr, err)
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}

// table is a memory table of the store's schema.
func (s *Store) table(name string) string { return pgx.Identifier{s.schema, name}.Sanitize() }

const entryColumns = `v.namespace, v.key, v.version, v.deleted, v.value, v.run_id, v.step, v.call_id, v.write_id`

func scanEntries(ctx context.Context, rows pgx.Rows, op string) ([]memoryport.Entry, error) {
	defer rows.Close()
	var out []memoryport.Entry
	for rows.Next() {
		var e memoryport.Entry
		var value []byte
		if err := rows.Scan(&e.Namespace, &e.Key, &e.Version, &e.Deleted, &value, &e.Provenance.RunID, &e.Provenance.Step,
			&e.Provenance.CallID, &e.Provenance.WriteID); err != nil {
			return nil, memError(ctx, op, err)
		}
		if len(value) > 0 {
			e.Value = value
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, memError(ctx, op, err)
	}
	return out, nil
}

// LoadEntries implements memoryport.Store.
func (s *Store) LoadEntries(ctx context.Context, namespaces []string) ([]memoryport.Entry, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+entryColumns+` FROM `+s.table("memory_heads")+` h JOIN `+s.table("memory_versions")+` v
		ON v.namespace = h.namespace AND v.key = h.key AND v.version = h.version
		WHERE h.live AND h.namespace = ANY($1)`, namespaces)
	if err != nil {
		return nil, memError(ctx, "load memory", err)
	}
	return scanEntries(ctx, rows, "load memory")
}

// EntryHeads implements memoryport.Store. A head of version 0 is a lock row
// of an entry never written (see lockHeads).
func (s *Store) EntryHeads(ctx context.Context, ids []memoryport.EntryID) ([]memoryport.Entry, error) {
	namespaces, keys := make([]string, len(ids)), make([]string, len(ids))
	for i, id := range ids {
		namespaces[i], keys[i] = id.Namespace, id.Key
	}
	rows, err := s.pool.Query(ctx, `SELECT `+entryColumns+` FROM unnest($1::text[], $2::text[]) AS q(namespace, key)
		JOIN `+s.table("memory_heads")+` h ON h.namespace = q.namespace AND h.key = q.key
		JOIN `+s.table("memory_versions")+` v ON v.namespace = h.namespace AND v.key = h.key AND v.version = h.version
		WHERE h.version > 0`, namespaces, keys)
	if err != nil {
		return nil, memError(ctx, "read memory heads", err)
	}
	return scanEntries(ctx, rows, "read memory heads")
}

// EntryHistory implements memoryport.Store.
func (s *Store) EntryHistory(ctx context.Context, namespace, key string) ([]memoryport.Entry, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+entryColumns+` FROM `+s.table("memory_versions")+` v
		WHERE v.namespace = $1 AND v.key = $2 ORDER BY v.version`, namespace, key)
	if err != nil {
		return nil, memError(ctx, "read memory history", err)
	}
	return scanEntries(ctx, rows, "read memory history")
}

// Namespaces implements memoryport.Store.
func (s *Store) Namespaces(ctx context.Context) ([]string, error) {
	return s.names(ctx, `SELECT DISTINCT namespace COLLATE "C" AS n FROM `+s.table("memory_heads")+` WHERE version > 0 ORDER BY n`, "list namespaces")
}

func (s *Store) names(ctx context.Context, q, op string) ([]string, error) {
	rows, err := s.pool.Query(ctx, q)
	if err != nil {
		return nil, memError(ctx, op, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, memError(ctx, op, err)
	}
	return out, nil
}

// LookupWrite implements memoryport.Store.
func (s *Store) LookupWrite(ctx context.Context, writeID string) (memoryport.Commit, bool, error) {
	return s.lookupWrite(ctx, s.pool, writeID)
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *Store) lookupWrite(ctx context.Context, q queryRower, writeID string) (memoryport.Commit, bool, error) {
	var digest string
	var entries []byte
	err := q.QueryRow(ctx, `SELECT digest, entries FROM `+s.table("memory_writes")+` WHERE write_id = $1`, writeID).Scan(&digest, &entries)
	if errors.Is(err, pgx.ErrNoRows) {
		return memoryport.Commit{}, false, nil
	}
	if err != nil {
		return memoryport.Commit{}, false, memError(ctx, "look up a memory write", err)
	}
	c, err := memoryport.DecodeCommit(writeID, digest, entries)
	if err != nil {
		return memoryport.Commit{}, false, fmt.Errorf("pgstore: memory write %q: %w", writeID, err)
	}
	return c, true, nil
}

// CommitWrite implements memoryport.Store: in one transaction it locks the
// heads of the entries the write names, then checks the write id (a
// concurrent writer of the same id has committed by then, or not at all),
// then the basis, then writes the versions, the heads and the write id.
func (s *Store) CommitWrite(ctx context.Context, w memoryport.Write) (memoryport.Commit, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return memoryport.Commit{}, memError(ctx, "begin memory commit", err)
	}
	defer tx.Rollback(ctx)
	heads, err := s.lockHeads(ctx, tx, w)
	if err != nil {
		return memoryport.Commit{}, err
	}
	digest := memoryport.WriteDigest(w)
	if c, found, err := s.lookupWrite(ctx, tx, w.ID); err != nil || found {
		if found && c.Digest != digest {
			return memoryport.Commit{}, fmt.Errorf("pgstore: write %q: %w", w.ID, memoryport.ErrWriteIDReused)
		}
		c.Replayed = found
		return c, err
	}
	if err := checkBasis(w, heads); err != nil {
		return memoryport.Commit{}, err
	}
	c, err := s.insertVersions(ctx, tx, w, heads)
	if err != nil {
		return memoryport.Commit{}, err
	}
	c.Digest = digest
	entries, err := memoryport.EncodeCommit(c)
	if err != nil {
		return memoryport.Commit{}, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.table("memory_writes")+` (write_id, digest, entries) VALUES ($1, $2, $3)`, w.ID, digest, entries); err != nil {
		return memoryport.Commit{}, memError(ctx, "record memory write", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return memoryport.Commit{}, memError(ctx, "commit memory", err)
	}
	return c, nil
}

// head is an entry's last version, and whether it is live.
type head struct {
	version int64
	live    bool
}

// lockHeads locks the heads of every entry the write names, in namespace
// and key order, after inserting a head (version 0) for each that has none.
func (s *Store) lockHeads(ctx context.Context, tx pgx.Tx, w memoryport.Write) (map[memoryport.EntryID]head, error) {
	ids := map[memoryport.EntryID]bool{}
	for _, e := range w.Basis {
		ids[e.ID()] = true
	}
	for _, op := range w.Ops {
		ids[op.ID()] = true
	}
	sorted := make([]memoryport.EntryID, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	slices.SortFunc(sorted, func(a, b memoryport.EntryID) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	nss, keys := make([]string, len(sorted)), make([]string, len(sorted))
	for i, id := range sorted {
		nss[i], keys[i] = id.Namespace, id.Key
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.table("memory_heads")+` (namespace, key, version, live)
		SELECT n, k, 0, false FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(n, k, i) ORDER BY i
		ON CONFLICT (namespace, key) DO NOTHING`, nss, keys); err != nil {
		return nil, memError(ctx, "insert memory heads", err)
	}
	rows, err := tx.Query(ctx, `SELECT namespace, key, version, live FROM `+s.table("memory_heads")+`
		WHERE (namespace, key) IN (SELECT n, k FROM unnest($1::text[], $2::text[]) AS t(n, k))
		ORDER BY namespace COLLATE "C", key COLLATE "C" FOR UPDATE`, nss, keys)
	if err != nil {
		return nil, memError(ctx, "lock memory heads", err)
	}
	defer rows.Close()
	heads := map[memoryport.EntryID]head{}
	for rows.Next() {
		var id memoryport.EntryID
		var h head
		if err := rows.Scan(&id.Namespace, &id.Key, &h.version, &h.live); err != nil {
			return nil, memError(ctx, "lock memory heads", err)
		}
		heads[id] = h
	}
	if err := rows.Err(); err != nil {
		return nil, memError(ctx, "lock memory heads", err)
	}
	return heads, nil
}

// checkBasis refuses a basis that does not match the locked heads.
func checkBasis(w memoryport.Write, heads map[memoryport.EntryID]head) error {
	lines := append(memoryport.Basis(nil), w.Basis...)
	for _, op := range w.Ops {
		lines = append(lines, memoryport.Expect{Namespace: op.Namespace, Key: op.Key, Version: w.Basis.Version(op.ID())})
	}
	for _, e := range lines {
		h := heads[e.ID()]
		live := int64(0)
		if h.live {
			live = h.version
		}
		if live != e.Version {
			return fmt.Errorf("pgstore: %s is at version %d, the write expects %d: %w", e.ID(), live, e.Version, memoryport.ErrBasisMismatch)
		}
	}
	return nil
}

// insertVersions writes each operation's version after its entry's head.
func (s *Store) insertVersions(ctx context.Context, tx pgx.Tx, w memoryport.Write, heads map[memoryport.EntryID]head) (memoryport.Commit, error) {
	c := memoryport.Commit{WriteID: w.ID}
	p := w.Provenance
	batch := &pgx.Batch{}
	for _, op := range w.Ops {
		v := heads[op.ID()].version + 1
		deleted := op.Kind == memoryport.OpDelete
		var value []byte
		if !deleted {
			value = op.Value
		}
		batch.Queue(`INSERT INTO `+s.table("memory_versions")+` (namespace, key, version, deleted, value, run_id, step, call_id, write_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, op.Namespace, op.Key, v, deleted, value, p.RunID, p.Step, p.CallID, w.ID)
		batch.Queue(`UPDATE `+s.table("memory_heads")+` SET version = $3, live = $4 WHERE namespace = $1 AND key = $2`,
			op.Namespace, op.Key, v, !deleted)
		c.Entries = append(c.Entries, memoryport.EntryVersion{Namespace: op.Namespace, Key: op.Key, Version: v, Deleted: deleted})
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return c, memError(ctx, "write memory versions", err)
	}
	return c, nil
}
