package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/polyloop/polyloop/memory/memoryport"
)

// LoadView implements memoryport.ViewStore.
func (s *Store) LoadView(ctx context.Context, name string) (memoryport.ViewVersion, error) {
	if err := s.usable(ctx, "load view"); err != nil {
		return memoryport.ViewVersion{}, err
	}
	v, found, err := viewRow(ctx, s.read, `SELECT data, digest FROM view_versions WHERE view = ? ORDER BY version DESC LIMIT 1`, name)
	if !found && err == nil {
		return memoryport.ViewVersion{View: name}, nil
	}
	return v, err
}

// ViewAt implements memoryport.ViewStore.
func (s *Store) ViewAt(ctx context.Context, name string, version int64) (memoryport.ViewVersion, error) {
	if err := s.usable(ctx, "read view"); err != nil {
		return memoryport.ViewVersion{}, err
	}
	v, found, err := viewRow(ctx, s.read, `SELECT data, digest FROM view_versions WHERE view = ? AND version = ?`, name, version)
	if !found && err == nil {
		return v, fmt.Errorf("sqlitestore: view %q version %d: %w", name, version, memoryport.ErrNoVersion)
	}
	return v, err
}

// LookupViewWrite implements memoryport.ViewStore.
func (s *Store) LookupViewWrite(ctx context.Context, writeID string) (memoryport.ViewVersion, bool, error) {
	if err := s.usable(ctx, "look up a view write"); err != nil {
		return memoryport.ViewVersion{}, false, err
	}
	return viewRow(ctx, s.read, `SELECT data, digest FROM view_versions WHERE write_id = ?`, writeID)
}

// Views implements memoryport.ViewStore.
func (s *Store) Views(ctx context.Context) ([]string, error) {
	return s.names(ctx, `SELECT DISTINCT view FROM view_versions ORDER BY view`, "list views")
}

func viewRow(ctx context.Context, q querier, query string, args ...any) (memoryport.ViewVersion, bool, error) {
	var data []byte
	var digest string
	err := q.QueryRowContext(ctx, query, args...).Scan(&data, &digest)
	if errors.Is(err, sql.ErrNoRows) {
		return memoryport.ViewVersion{}, false, nil
	}
	if err != nil {
		return memoryport.ViewVersion{}, false, memError(ctx, "read view", err)
	}
	v, err := memoryport.DecodeView(data)
	if err != nil {
		return memoryport.ViewVersion{}, false, fmt.Errorf("sqlitestore: view version: %w", err)
	}
	v.Digest = digest
	return v, true, nil
}

// CommitView implements memoryport.ViewStore: one write transaction checks the
// write id, then the view's last version, then writes the next.
func (s *Store) CommitView(ctx context.Context, w memoryport.ViewWrite) (memoryport.ViewVersion, error) {
	if err := s.usable(ctx, "commit view"); err != nil {
		return memoryport.ViewVersion{}, err
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return memoryport.ViewVersion{}, memError(ctx, "begin view commit", err)
	}
	defer tx.Rollback()
	digest := memoryport.ViewWriteDigest(w)
	if v, found, err := viewRow(ctx, tx, `SELECT data, digest FROM view_versions WHERE write_id = ?`, w.ID); err != nil || found {
		if found && v.Digest != digest {
			return memoryport.ViewVersion{}, fmt.Errorf("sqlitestore: view write %q: %w", w.ID, memoryport.ErrWriteIDReused)
		}
		v.Replayed = found
		return v, err
	}
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM view_versions WHERE view = ?`, w.Next.View).Scan(&last); err != nil {
		return memoryport.ViewVersion{}, memError(ctx, "read view version", err)
	}
	if last != w.Basis {
		return memoryport.ViewVersion{}, fmt.Errorf("sqlitestore: view %q is at version %d, the write expects %d: %w", w.Next.View, last, w.Basis, memoryport.ErrBasisMismatch)
	}
	v := w.Next
	v.Version, v.Provenance.WriteID = w.Basis+1, w.ID
	data, err := memoryport.EncodeView(v)
	if err != nil {
		return memoryport.ViewVersion{}, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO view_versions (view, version, write_id, digest, data) VALUES (?, ?, ?, ?, ?)`,
		v.View, v.Version, w.ID, digest, data); err != nil {
		return memoryport.ViewVersion{}, memError(ctx, "write view version", err)
	}
	if err := tx.Commit(); err != nil {
		return memoryport.ViewVersion{}, memError(ctx, "commit view", err)
	}
	v.Digest = digest
	return v, nil
}
