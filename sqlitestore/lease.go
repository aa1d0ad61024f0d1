//go:build unix

package sqlitestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/polyloop/polyloop"
)

var _ polyloop.Leaser = (*Store)(nil)

// LeasePollInterval is how often a Store checks that the lock files of the
// leases it holds are still its own: a holder forced away (see
// AcquireLease) sees Lost closed within this interval.
const LeasePollInterval = 500 * time.Millisecond

// probeGrace is how long an acquisition waits out a lock it meets before
// it takes it for a holder's: LiveHolder (polyloop show, ls, view) holds a
// shared lock on the file for the moment of its probe.
const probeGrace = 50 * time.Millisecond

// maxLeaseTries bounds the retries of an acquisition that keeps meeting a
// lock file replaced or removed under it.
const maxLeaseTries = 50

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
		return s.grant(f, path, req.Owner, prev, forced)
	}
	return nil, fmt.Errorf("sqlitestore: lease %s: the lock file kept changing under %d tries", path, maxLeaseTries)
}

var (
	errHeld  = errors.New("held")
	errRetry = errors.New("the lock file changed: try again")
)

// tryLock opens and locks the run's lock file. It returns the locked file
// and the owner the file names (a dead holder's, if any); errHeld with the
// holder when another holder has the lock; errRetry when the file was
// replaced or removed between the open and the lock.
func tryLock(path string) (*os.File, polyloop.LeaseOwner, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, polyloop.LeaseOwner{}, fmt.Errorf("sqlitestore: lease file: %w", err)
	}
	err = lockExclusive(f)
	owner := readOwner(f)
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return nil, owner, errHeld
	case err != nil:
		f.Close()
		return nil, owner, fmt.Errorf("sqlitestore: lock %s: %w", path, err)
	case !isCurrent(f, path):
		f.Close()
		return nil, owner, errRetry
	}
	return f, owner, nil
}

// lockExclusive takes the exclusive flock of f without blocking, waiting
// out up to probeGrace a lock held for a moment (a probe's) before it
// reports EWOULDBLOCK.
func lockExclusive(f *os.File) error {
	deadline := time.Now().Add(probeGrace)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

// force takes the run's lease from a live holder: a new locked file
// replaces the old one. It returns the new file, the holder it replaced,
// and whether that holder was live (false: it went away meanwhile, and
// this is a plain grant).
func (s *Store) force(dir, path string) (*os.File, polyloop.LeaseOwner, bool, error) {
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, polyloop.LeaseOwner{}, false, err
	}
	defer unlock()
	f, holder, err := tryLock(path)
	if !errors.Is(err, errHeld) {
		return f, holder, false, err
	}
	tmp, err := os.CreateTemp(dir, ".force-*")
	if err != nil {
		return nil, holder, false, fmt.Errorf("sqlitestore: lease file: %w", err)
	}
	if err := syscall.Flock(int(tmp.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, holder, false, fmt.Errorf("sqlitestore: lock %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, holder, false, fmt.Errorf("sqlitestore: lease take-over: %w", err)
	}
	return tmp, holder, true, nil
}

// grant writes the owner into the locked file and registers the lease.
func (s *Store) grant(f *os.File, path string, owner, prev polyloop.LeaseOwner, forced bool) (polyloop.Lease, error) {
	data, err := json.Marshal(owner)
	if err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.WriteAt(data, 0); err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("sqlitestore: writing lease file %s: %w", path, err)
	}
	l := &fileLease{set: &s.leases, f: f, path: path, lost: make(chan struct{})}
	if prev.Token != "" || forced {
		reason := polyloop.TakeoverHolderDead
		if forced {
			reason = polyloop.TakeoverForced
		}
		l.prev = &polyloop.LeaseTakeover{From: prev, To: owner, Reason: reason}
	}
	s.leases.add(l)
	return l, nil
}

// lockDir takes the directory's lock that forced take-overs and releases
// share.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".force.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: lease directory lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("sqlitestore: lease directory lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// readOwner reads the owner a lock file names; the zero owner when it names
// none (or is being written).
func readOwner(f *os.File) polyloop.LeaseOwner {
	var o polyloop.LeaseOwner
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 64<<10))
	if err != nil || len(data) == 0 {
		return o
	}
	// A shorter owner written over a longer one leaves a tail until the
	// truncate: decode the first value only.
	_ = json.NewDecoder(strings.NewReader(string(data))).Decode(&o)
	return o
}

// isCurrent reports whether f is the file at path now.
func isCurrent(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// leaseFileName turns a run id into a file name (see AcquireLease).
func leaseFileName(runID string) string {
	var b strings.Builder
	for i := 0; i < len(runID); i++ {
		c := runID[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' && i > 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() > 200 {
		sum := sha256.Sum256([]byte(runID))
		return "%h" + hex.EncodeToString(sum[:]) + ".lock"
	}
	return b.String() + ".lock"
}

// fileLease is a held lease: the locked file.
type fileLease struct {
	set  *leaseSet
	f    *os.File
	path string
	prev *polyloop.LeaseTakeover
	lost chan struct{}
	once sync.Once // Release
	err  error
	gone sync.Once // closing lost
}

func (l *fileLease) TakenOver() *polyloop.LeaseTakeover { return l.prev }
func (l *fileLease) Lost() <-chan struct{}              { return l.lost }

// Release implements polyloop.Lease: it removes the lock file if it is
// still this lease's, then unlocks it by closing it.
func (l *fileLease) Release(context.Context) error {
	l.once.Do(func() {
		l.set.remove(l)
		unlock, err := lockDir(filepath.Dir(l.path))
		if err == nil {
			if isCurrent(l.f, l.path) {
				if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
					err = fmt.Errorf("sqlitestore: removing lease file: %w", rerr)
				}
			}
			unlock()
		}
		if cerr := l.f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("sqlitestore: closing lease file: %w", cerr)
		}
		l.markLost()
		l.err = err
	})
	return l.err
}

func (l *fileLease) markLost() { l.gone.Do(func() { close(l.lost) }) }

// leaseSet is what a Store holds; a goroutine polls it while it is not
// empty.
type leaseSet struct {
	mu      sync.Mutex
	held    map[*fileLease]bool
	polling bool
}

func (s *leaseSet) add(l *fileLease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = map[*fileLease]bool{}
	}
	s.held[l] = true
	if !s.polling {
		s.polling = true
		go s.poll()
	}
}

func (s *leaseSet) remove(l *fileLease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, l)
}

// poll closes Lost of every lease whose lock file is no longer the run's,
// and ends when no lease is held.
func (s *leaseSet) poll() {
	t := time.NewTicker(LeasePollInterval)
	defer t.Stop()
	for range t.C {
		s.mu.Lock()
		if len(s.held) == 0 {
			s.polling = false
			s.mu.Unlock()
			return
		}
		for l := range s.held {
			if !isCurrent(l.f, l.path) {
				delete(s.held, l)
				l.markLost()
			}
		}
		s.mu.Unlock()
	}
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
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return readOwner(f), true, nil
	case err != nil:
		return polyloop.LeaseOwner{}, false, fmt.Errorf("sqlitestore: probing lease file: %w", err)
	}
	return polyloop.LeaseOwner{}, false, nil
}
