//go:build unix && !linux

package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/polyloop/polyloop"
)

// leaseLocks is the Linux lease file's state (lease_linux.go); elsewhere
// every lease is a file of its own.
type leaseLocks struct{}

func (*leaseLocks) close() {}

// AcquireLease implements polyloop.Leaser with one lock file per run in the
// directory PATH.leases next to the database, locked with flock(2). PATH is
// the database file's resolved path (absolute, every symlink followed, as
// Open found it), so a Store opened through a symlink or a relative path
// shares the leases of every other Store of that file. A hard link is
// another path to the same file and gets its own directory: open a
// database by one of its names.
//
// Liveness is the kernel's: a process that dies, however it dies, loses its
// flock at once, so a dead holder's lease is taken over by the next
// acquisition without delay. flock, not fcntl: an fcntl lock belongs to the
// process and is dropped when any descriptor of the file closes, and two
// Stores of one process would not exclude each other; a flock belongs to
// the open file, so every Store — in this process or another — is its own
// holder. The lock file holds the holder's LeaseOwner as JSON, written
// without a sync (it names the holder; it is not what holds the lease) and
// removed on Release, so a file whose lock is free but that still names a
// holder is a dead holder's. Run ids become file names by percent-escaping
// every byte outside [a-z0-9._-] (upper case too, for file systems that
// fold case); a name longer than 200 bytes is replaced by "%h" and the
// SHA-256 of the run id.
//
// A forced take-over writes a new lock file, locked by the new holder, and
// renames it over the old one; the old holder, polling every
// LeasePollInterval, finds that its file is no longer the run's and closes
// Lost. Forced take-overs and releases serialize on the directory's
// .force.lock, so a release never removes a file it does not hold.
//
// Leases need one machine: flock over a network file system is not to be
// trusted, as SQLite itself is not.
func (s *Store) AcquireLease(ctx context.Context, runID string, req polyloop.LeaseRequest) (polyloop.Lease, error) {
	if req.Owner.Token == "" {
		return nil, errors.New("sqlitestore: lease request without an owner token")
	}
	dir := s.leaseDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sqlitestore: lease directory: %w", err)
	}
	path := filepath.Join(dir, leaseFileName(runID))
	for range maxLeaseTries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, prev, err := tryLock(path)
		forced := false
		if errors.Is(err, errHeld) {
			if !req.TakeOver {
				return nil, &polyloop.LeaseHeldError{RunID: runID, Holder: prev}
			}
			f, prev, forced, err = s.force(dir, path)
		}
		if errors.Is(err, errRetry) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return s.grantFile(f, path, req.Owner, prev, forced, false)
	}
	return nil, fmt.Errorf("sqlitestore: lease %s: the lock file kept changing under %d tries", path, maxLeaseTries)
}

var _ polyloop.LeaseProber = (*Store)(nil)

// LiveHolder implements polyloop.LeaseProber: a shared flock tried on the
// run's lock file, and dropped at once, tells whether a live holder has it.
// An acquisition racing the probe waits it out (up to probeGrace), so
// polyloop show, ls and view, which probe, never make a resume refused.
func (s *Store) LiveHolder(ctx context.Context, runID string) (polyloop.LeaseOwner, bool, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.LeaseOwner{}, false, err
	}
	f, err := os.Open(filepath.Join(s.leaseDir, leaseFileName(runID)))
	if errors.Is(err, os.ErrNotExist) {
		return polyloop.LeaseOwner{}, false, nil
	}
	if err != nil {
		return polyloop.LeaseOwner{}, false, fmt.Errorf("sqlitestore: lease file: %w", err)
	}
	defer f.Close()
	return probeLockFile(f)
}
