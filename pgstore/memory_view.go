package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop/memory/memoryport"
)

// LoadView implements memoryport.ViewStore.
func (s *Store) LoadView(ctx context.Context, name string) (memoryport.ViewVersion, error) {
	v, found, err := s.viewRow(ctx, s.pool, `WHERE view = $1 ORDER BY version DESC LIMIT 1`, name)
	if !found && err == nil {
		return memoryport.ViewVersion{View: name}, nil
	}
	return v, err
}

// ViewAt implements memoryport.ViewStore.
func (s *Store) ViewAt(ctx context.Context, name string, version int64) (memoryport.ViewVersion, error) {
	v, found, err := s.viewRow(ctx, s.pool, `WHERE view = $1 AND version = $2`, name, version)
	if !found && err == nil {
		return v, fmt.Errorf("pgstore: view %q version %d: %w", name, version, memoryport.ErrNoVersion)
	}
	return v, err
}

// LookupViewWrite implements memoryport.ViewStore.
func (s *Store) LookupViewWrite(ctx context.Context, writeID string) (memoryport.ViewVersion, bool, error) {
	return s.viewRow(ctx, s.pool, `WHERE write_id = $1`, writeID)
}

// Views implements memoryport.ViewStore.
func (s *Store) Views(ctx context.Context) ([]string, error) {
	return s.names(ctx, `SELECT DISTINCT view COLLATE "C" AS n FROM `+s.table("view_versions")+` ORDER BY n`, "list views")
}

func (s *Store) viewRow(ctx context.Context, q queryRower, where string, args ...any) (memoryport.ViewVersion, bool, error) {
	var data []byte
	var digest string
	err := q.QueryRow(ctx, `SELECT data, digest FROM `+s.table("view_versions")+` `+where, args...).Scan(&data, &digest)
	if errors.Is(err, pgx.ErrNoRows) {
		return memoryport.ViewVersion{}, false, nil
	}
	if err != nil {
		return memoryport.ViewVersion{}, false, memError(ctx, "read view", err)
	}
	v, err := memoryport.DecodeView(data)
	if err != nil {
		return memoryport.ViewVersion{}, false, fmt.Errorf("pgstore: view version: %w", err)
	}
	v.Digest = digest
	return v, true, nil
}

// CommitView implements memoryport.ViewStore: in one transaction, under an
// advisory lock on the view, it checks the write id, then the view's last
// version, then writes the next.
func (s *Store) CommitView(ctx context.Context, w memoryport.ViewWrite) (memoryport.ViewVersion, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return memoryport.ViewVersion{}, memError(ctx, "begin view commit", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('polyloop.view:' || $1), hashtext($2))`, s.schema, w.Next.View); err != nil {
		return memoryport.ViewVersion{}, memError(ctx, "lock view", err)
	}
	digest := memoryport.ViewWriteDigest(w)
	if v, found, err := s.viewRow(ctx, tx, `WHERE write_id = $1`, w.ID); err != nil || found {
		if found && v.Digest != digest {
			return memoryport.ViewVersion{}, fmt.Errorf("pgstore: view write %q: %w", w.ID, memoryport.ErrWriteIDReused)
		}
		v.Replayed = found
		return v, err
	}
	var last int64
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+s.table("view_versions")+` WHERE view = $1`, w.Next.View).Scan(&last); err != nil {
		return memoryport.ViewVersion{}, memError(ctx, "read view version", err)
	}
	if last != w.Basis {
		return memoryport.ViewVersion{}, fmt.Errorf("pgstore: view %q is at version %d, the write expects %d: %w", w.Next.View, last, w.Basis, memoryport.ErrBasisMismatch)
	}
	v := w.Next
	v.Version, v.Provenance.WriteID = w.Basis+1, w.ID
	data, err := memoryport.EncodeView(v)
	if err != nil {
		return memoryport.ViewVersion{}, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.table("view_versions")+` (view, version, write_id, digest, data) VALUES ($1, $2, $3, $4, $5)`,
		v.View, v.Version, w.ID, digest, data); err != nil {
		return memoryport.ViewVersion{}, memError(ctx, "write view version", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return memoryport.ViewVersion{}, memError(ctx, "commit view", err)
	}
	v.Digest = digest
	return v, nil
}
