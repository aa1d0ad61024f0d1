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

// grantFile writes the owner into the locked per-run file and registers
// the lease. keep: Release empties the file instead of removing it (see
// lease_linux.go).
func (s *Store) grantFile(f *os.File, path string, owner, prev polyloop.LeaseOwner, forced, keep bool) (polyloop.Lease, error) {
	if err := writeOwner(f, owner); err != nil {
		f.Close()
		return nil, fmt.Errorf("sqlitestore: writing lease file %s: %w", path, err)
	}
	l := &fileLease{set: &s.leases, f: f, path: path, keep: keep, lost: make(chan struct{})}
	l.prev = takeover(prev, owner, forced)
	s.leases.add(l)
	return l, nil
}

// writeOwner writes owner, as JSON, over the content of the locked file f.
func writeOwner(f *os.File, owner polyloop.LeaseOwner) error {
	data, err := json.Marshal(owner)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return err
	}
	return f.Truncate(int64(len(data)))
}

// takeover is the take-over a grant reports: nil when the lease was free
// (prev names no holder and the grant was not forced).
func takeover(prev, to polyloop.LeaseOwner, forced bool) *polyloop.LeaseTakeover {
	if prev.Token == "" && !forced {
		return nil
	}
	reason := polyloop.TakeoverHolderDead
	if forced {
		reason = polyloop.TakeoverForced
	}
	return &polyloop.LeaseTakeover{From: prev, To: to, Reason: reason}
}

// fileLease is a held lease: the locked per-run file.
type fileLease struct {
	set  *leaseSet
	f    *os.File
	path string
	// keep: Release empties the file rather than removing it.
	keep bool
	prev *polyloop.LeaseTakeover
	lost chan struct{}
	once sync.Once // Release
	err  error
	gone sync.Once // closing lost
}

func (l *fileLease) TakenOver() *polyloop.LeaseTakeover { return l.prev }
func (l *fileLease) Lost() <-chan struct{}              { return l.lost }

// current reports whether the lock file is still this lease's.
func (l *fileLease) current() bool { return isCurrent(l.f, l.path) }

// Release implements polyloop.Lease: it removes (or, with keep, empties)
// the lock file if it is still this lease's, then unlocks it by closing it.
func (l *fileLease) Release(context.Context) error {
	l.once.Do(func() {
		l.set.remove(l)
		unlock, err := lockDir(filepath.Dir(l.path))
		if err == nil {
			if isCurrent(l.f, l.path) {
				if l.keep {
					if terr := l.f.Truncate(0); terr != nil {
						err = fmt.Errorf("sqlitestore: emptying lease file: %w", terr)
					}
				} else if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
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

// polled is a held lease the poller checks: current reports whether it is
// still the holder's, markLost closes its Lost channel.
type polled interface {
	current() bool
	markLost()
}

// leaseSet is what a Store holds; a goroutine polls it while it is not
// empty.
type leaseSet struct {
	mu      sync.Mutex
	held    map[polled]bool
	polling bool
}

func (s *leaseSet) add(l polled) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = map[polled]bool{}
	}
	s.held[l] = true
	if !s.polling {
		s.polling = true
		go s.poll()
	}
}

func (s *leaseSet) remove(l polled) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, l)
}

// poll closes Lost of every lease that is no longer its holder's, and ends
// when no lease is held.
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
			if !l.current() {
				delete(s.held, l)
				l.markLost()
			}
		}
		s.mu.Unlock()
	}
}

// probeLockFile tries a shared flock on a run's lock file f, dropped with
// f: when another holds it, the run is held, by the owner the file names.
func probeLockFile(f *os.File) (polyloop.LeaseOwner, bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return readOwner(f), true, nil
	case err != nil:
		return polyloop.LeaseOwner{}, false, fmt.Errorf("sqlitestore: probing lease file: %w", err)
	}
	return polyloop.LeaseOwner{}, false, nil
}
