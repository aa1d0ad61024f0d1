//go:build linux

package sqlitestore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/polyloop/polyloop"
)

// Open-file-description locks (fcntl(2), Linux 3.15): not in package
// syscall. The same numbers on every Linux architecture.
const (
	fOFDGetlk = 36
	fOFDSetlk = 37
)

const (
	// leaseFileName never makes a name that starts with '.'.
	runsFileName = ".runs"
	// recordSize is a holder record's size in the lease file: a state
	// byte, the owner's JSON length (2 bytes, big-endian), the SHA-256 of
	// the run id, then the owner as JSON.
	recordSize   = 512
	recordHeader = 35
	recordLive   = 'L'
	// runLockBase is where the run locks' bytes start: far above any
	// record (records stay below 2^53 bytes), at an offset no data is
	// written to.
	runLockBase = int64(1) << 62
)

// runLockOffset is the byte of the lease file a run's lock takes: 62 bits
// of the SHA-256 of its id. A variable for the collision test.
var runLockOffset = func(sum [32]byte) int64 {
	return runLockBase | int64(binary.BigEndian.Uint64(sum[:8])>>2)
}

// AcquireLease implements polyloop.Leaser (design records 0016 and 0052).
// On Linux the leases of a database share one file, PATH.leases/.runs,
// where PATH is the database file's resolved path (absolute, every symlink
// followed, as Open found it), so a Store opened through a symlink or a
// relative path shares the leases of every other Store of that file. A
// hard link is another path to the same file and gets its own leases:
// open a database by one of its names.
//
// A run's lease is an exclusive open-file-description byte-range lock
// (F_OFD_SETLK) on one byte of that file, at an offset taken from the
// SHA-256 of the run id (62 bits). Liveness is the kernel's: an OFD lock
// belongs to the open file, not to the process (so every Store, in this
// process or another, is its own holder), and the kernel drops it when the
// holder dies, however it dies: a dead holder's lease is taken over by the
// next acquisition without delay. Two runs whose ids share the offset (a
// 62-bit hash: never met in practice) exclude each other: the second is
// refused as held, which is safe.
//
// Who holds a run is a record in the same file: a slot of 512 bytes, held
// by its writer with an OFD lock on its first byte, naming the run (its
// SHA-256) and the holder's LeaseOwner (JSON, written without a sync: it
// names the holder, it is not what holds the lease). Release clears the
// record, so a record of the run whose slot is unlocked is a dead holder's:
// the next holder of the run takes it over and reuses its slot. Each
// acquisition reads the records (512 bytes for each held lease and each
// dead holder's record not yet taken over).
//
// The per-run lock file of earlier versions (and of other systems) still
// counts: when PATH.leases holds one for the run, it decides. Its holder
// (an older binary, or a forced take-over) is live while its flock is, and
// an acquisition that finds its flock free takes it, then the run's lock,
// and removes the file. A forced take-over writes such a file, locked by
// the new holder, and renames it over (or into) place; the holder it
// forced away, polling every LeasePollInterval, finds that its run has a
// file and closes Lost. A forced holder's Release empties its file instead
// of removing it, so that the lock still held by the holder it forced away
// keeps counting for nothing until someone holds both. An older binary
// that takes a run this one holds makes a file too: the holder here sees
// Lost within one poll (design record 0052 on mixing versions).
//
// Leases need one machine: locks over a network file system are not to be
// trusted, as SQLite itself is not.
func (s *Store) AcquireLease(ctx context.Context, runID string, req polyloop.LeaseRequest) (polyloop.Lease, error) {
	if req.Owner.Token == "" {
		return nil, errors.New("sqlitestore: lease request without an owner token")
	}
	for range maxLeaseTries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l, err := s.acquire(runID, req)
		if errors.Is(err, errRetry) {
			continue
		}
		return l, err
	}
	return nil, fmt.Errorf("sqlitestore: lease of run %q: its lock file kept changing under %d tries", runID, maxLeaseTries)
}

// acquire is one attempt of AcquireLease; errRetry asks for another.
func (s *Store) acquire(runID string, req polyloop.LeaseRequest) (polyloop.Lease, error) {
	k := &s.lk
	path := filepath.Join(s.leaseDir, leaseFileName(runID))
	sum := sha256.Sum256([]byte(runID))
	off := runLockOffset(sum)
	if h := k.holding(runID); h != nil {
		if !req.TakeOver {
			return nil, &polyloop.LeaseHeldError{RunID: runID, Holder: h.owner}
		}
		return s.forceFile(path, req.Owner, h.owner, false)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	switch {
	case err == nil:
		return s.acquireByFile(f, path, runID, sum, off, req)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("sqlitestore: lease file: %w", err)
	}
	lf, err := k.open(s.leaseDir, true)
	if err != nil {
		return nil, err
	}
	l, holder, err := k.lockRun(lf, s, runID, path, off, req.Owner, false)
	if err != nil {
		return nil, err
	}
	if l == nil {
		if holder == nil {
			o, _ := k.holderOf(lf, sum)
			holder = &o
		}
		if !req.TakeOver {
			return nil, &polyloop.LeaseHeldError{RunID: runID, Holder: *holder}
		}
		return s.forceFile(path, req.Owner, *holder, false)
	}
	// A forced take-over or an older binary may have made the run's file
	// since it was looked for: then the file decides.
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		k.unreserve(l)
		return nil, errRetry
	}
	return k.grant(l, sum, polyloop.LeaseOwner{})
}

// acquireByFile acquires a run that has a per-run lock file (see
// AcquireLease).
func (s *Store) acquireByFile(f *os.File, path, runID string, sum [32]byte, off int64, req polyloop.LeaseRequest) (polyloop.Lease, error) {
	err := lockExclusive(f)
	owner := readOwner(f)
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		if !req.TakeOver {
			return nil, &polyloop.LeaseHeldError{RunID: runID, Holder: owner}
		}
		return s.forceFile(path, req.Owner, owner, true)
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("sqlitestore: lock %s: %w", path, err)
	case !isCurrent(f, path):
		f.Close()
		return nil, errRetry
	}
	// No one holds the run through the file: take the run's lock too, and
	// the file can go.
	lf, err := s.lk.open(s.leaseDir, true)
	if err != nil {
		f.Close()
		return nil, err
	}
	l, _, err := s.lk.lockRun(lf, s, runID, path, off, req.Owner, true)
	if err != nil {
		f.Close()
		return nil, err
	}
	if l == nil {
		// A holder forced away keeps the run's lock (or an acquisition
		// that will meet this file's lock and back off has it): the file
		// holds the run.
		return s.grantFile(f, path, req.Owner, owner, false, true)
	}
	unlock, err := lockDir(s.leaseDir)
	removed := false
	if err == nil {
		if isCurrent(f, path) {
			if err = os.Remove(path); err == nil {
				removed = true
			}
		}
		unlock()
	}
	f.Close()
	if err != nil || !removed {
		s.lk.unreserve(l)
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: removing lease file: %w", err)
		}
		return nil, errRetry // forced meanwhile: the new file decides
	}
	return s.lk.grant(l, sum, owner)
}

// forceFile takes a run from a live holder by a per-run lock file (see
// AcquireLease): the holder named is the one forced away. viaFile: the
// holder held the file, and a file found free means it is gone (try
// again).
func (s *Store) forceFile(path string, owner, holder polyloop.LeaseOwner, viaFile bool) (polyloop.Lease, error) {
	if err := os.MkdirAll(s.leaseDir, 0o700); err != nil {
		return nil, fmt.Errorf("sqlitestore: lease directory: %w", err)
	}
	f, prev, forced, err := s.force(s.leaseDir, path)
	if err != nil {
		return nil, err
	}
	if !forced {
		if viaFile {
			f.Close()
			return nil, errRetry
		}
		prev = holder
	}
	return s.grantFile(f, path, owner, prev, true, true)
}

// leaseLocks is a Store's side of the lease file: its descriptor (one open
// file description, whose locks are this Store's) and what it holds there.
// The kernel does not exclude a description from its own locks: the maps
// do, within the Store.
type leaseLocks struct {
	mu    sync.Mutex
	f     *os.File             // read-write, holds the locks
	ro    *os.File             // read-only, for probes before any acquisition
	byRun map[string]*ofdLease // the run's lease in this Store, held or being granted
	byOff map[int64]*ofdLease  // whose is the run lock at an offset
	slots map[int64]*ofdLease  // whose is a record's slot
}

// ofdLease is a lease held by a lock in the lease file.
type ofdLease struct {
	k     *leaseLocks
	set   *leaseSet
	runID string
	path  string      // the run's lock file, if one appears
	file  os.FileInfo // the lease file its lock is in
	off   int64
	slot  int64 // -1: none yet
	owner polyloop.LeaseOwner
	prev  *polyloop.LeaseTakeover
	// from is the forced-away lease of this Store whose run lock this one
	// took on (the description held it already).
	from     *ofdLease
	released bool // under k.mu
	lost     chan struct{}
	once     sync.Once // Release
	err      error
	gone     sync.Once // closing lost
}

func (l *ofdLease) TakenOver() *polyloop.LeaseTakeover { return l.prev }
func (l *ofdLease) Lost() <-chan struct{}              { return l.lost }
func (l *ofdLease) markLost()                          { l.gone.Do(func() { close(l.lost) }) }

func (l *ofdLease) isLost() bool {
	select {
	case <-l.lost:
		return true
	default:
		return false
	}
}

// current reports whether the lease is still its holder's: no per-run lock
// file has appeared for its run (a forced take-over, or an older binary),
// and the lease file its lock is in is still the store's (removed or
// replaced, its locks decide nothing any more).
func (l *ofdLease) current() bool {
	if _, err := os.Lstat(l.path); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	st, err := os.Stat(filepath.Join(filepath.Dir(l.path), runsFileName))
	return err == nil && os.SameFile(st, l.file)
}

// Release implements polyloop.Lease: it clears the holder's record and
// unlocks its slot and the run's lock (unless another lease of this Store
// has taken that lock on since).
func (l *ofdLease) Release(context.Context) error {
	l.once.Do(func() {
		l.set.remove(l)
		k := l.k
		k.mu.Lock()
		l.released = true
		l.err = k.freeSlot(l)
		if k.byOff[l.off] == l {
			if err := k.drop(l); l.err == nil {
				l.err = err
			}
		}
		if k.byRun[l.runID] == l {
			delete(k.byRun, l.runID)
		}
		k.mu.Unlock()
		l.markLost()
	})
	return l.err
}

// open returns the lease file's descriptor, opening it: for acquisitions
// (create) read-write, creating the file; for probes, the same when it is
// open, else one opened for them (nil when the file does not exist).
func (k *leaseLocks) open(dir string, create bool) (*os.File, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.f != nil {
		return k.f, nil
	}
	path := filepath.Join(dir, runsFileName)
	if !create {
		if k.ro != nil {
			return k.ro, nil
		}
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: lease file: %w", err)
		}
		k.ro = f
		return f, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sqlitestore: lease directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: lease file: %w", err)
	}
	k.f = f
	return f, nil
}

// close closes the descriptors when the Store holds no lease.
func (k *leaseLocks) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ro != nil {
		k.ro.Close()
		k.ro = nil
	}
	if k.f != nil && len(k.byOff) == 0 && len(k.slots) == 0 {
		k.f.Close()
		k.f = nil
	}
}

// holding is the live lease of runID in this Store, or nil. A lease that
// is no longer current is marked lost.
func (k *leaseLocks) holding(runID string) *ofdLease {
	k.mu.Lock()
	h := k.byRun[runID]
	k.mu.Unlock()
	if h == nil || h.isLost() {
		return nil
	}
	if !h.current() {
		h.markLost()
		return nil
	}
	return h
}

// lockRun takes the run's lock for a new lease of owner, registered in the
// maps but not yet granted. Nil when another holder has the lock: in this
// Store, named (a collision names no one), or elsewhere (nil holder).
// byFile: the caller holds the run's lock file, which decides: a lease of
// this Store on the run by its lock is lost (a file appeared for its run).
func (k *leaseLocks) lockRun(f *os.File, s *Store, runID, path string, off int64, owner polyloop.LeaseOwner, byFile bool) (*ofdLease, *polyloop.LeaseOwner, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("sqlitestore: lease file: %w", err)
	}
	l := &ofdLease{k: k, set: &s.leases, runID: runID, path: path, file: fi, off: off, slot: -1, owner: owner, lost: make(chan struct{})}
	if h := k.byOff[off]; h != nil {
		switch {
		case h.runID != runID:
			return nil, &polyloop.LeaseOwner{}, nil
		case !h.isLost() && !byFile:
			return nil, &h.owner, nil
		}
		h.markLost()
		// This Store's lease forced away from the run: the description
		// holds the lock, the new lease takes it on, and the old record
		// names no one any more.
		l.from = h
		_ = k.clearRecord(h)
	} else if err := ofdLock(f, syscall.F_WRLCK, off); err != nil {
		if busy(err) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("sqlitestore: lease lock: %w", err)
	}
	if k.byRun == nil {
		k.byRun, k.byOff, k.slots = map[string]*ofdLease{}, map[int64]*ofdLease{}, map[int64]*ofdLease{}
	}
	k.byOff[off], k.byRun[runID] = l, l
	return l, nil, nil
}

// unreserve gives up the run lock of a lease not granted.
func (k *leaseLocks) unreserve(l *ofdLease) {
	k.mu.Lock()
	defer k.mu.Unlock()
	l.released = true
	if k.byRun[l.runID] == l {
		delete(k.byRun, l.runID)
	}
	if k.byOff[l.off] == l {
		_ = k.drop(l)
	}
}

// drop gives l's run lock back to the lease it took it from, or unlocks
// it. k.mu is held and l owns the offset.
func (k *leaseLocks) drop(l *ofdLease) error {
	delete(k.byOff, l.off)
	if p := l.from; p != nil && !p.released {
		k.byOff[l.off] = p
		return nil
	}
	if k.f == nil {
		return nil
	}
	if err := ofdLock(k.f, syscall.F_UNLCK, l.off); err != nil {
		return fmt.Errorf("sqlitestore: lease unlock: %w", err)
	}
	return nil
}

// grant writes l's record in a slot — the dead holder's of the run when
// there is one, whom the lease then takes over (unless prev, from the
// run's lock file, names one already) — and registers the lease.
func (k *leaseLocks) grant(l *ofdLease, sum [32]byte, prev polyloop.LeaseOwner) (polyloop.Lease, error) {
	k.mu.Lock()
	f := k.f
	tbl, err := readAll(f)
	if err != nil {
		k.mu.Unlock()
		k.unreserve(l)
		return nil, err
	}
	slot, empty := int64(-1), []int64(nil)
	n := int64(len(tbl) / recordSize)
	for i := range n {
		if k.slots[i] != nil {
			continue
		}
		rec := tbl[i*recordSize : (i+1)*recordSize]
		if rec[0] != recordLive {
			empty = append(empty, i)
			continue
		}
		if !bytes.Equal(rec[3:recordHeader], sum[:]) || ofdLock(f, syscall.F_WRLCK, i*recordSize) != nil {
			continue // another run's, or live
		}
		// A dead holder's record of this run: this lease takes it over.
		if o, ok := decodeRecord(rec); ok && prev.Token == "" {
			prev = o
		}
		if slot < 0 {
			slot = i
		} else { // an older one
			_, _ = f.WriteAt(make([]byte, recordSize), i*recordSize)
			_ = ofdLock(f, syscall.F_UNLCK, i*recordSize)
		}
	}
	for i := 0; slot < 0; i++ {
		var cand int64
		if i < len(empty) {
			cand = empty[i]
		} else {
			cand = n + int64(i-len(empty))
		}
		if k.slots[cand] != nil {
			continue
		}
		if err := ofdLock(f, syscall.F_WRLCK, cand*recordSize); err != nil {
			if busy(err) {
				continue
			}
			k.mu.Unlock()
			k.unreserve(l)
			return nil, fmt.Errorf("sqlitestore: lease record lock: %w", err)
		}
		// Written since the table was read? A record left there is a
		// dead holder's, of another run: keep it for its run.
		rec := make([]byte, recordSize)
		if _, err := f.ReadAt(rec, cand*recordSize); err != nil && !errors.Is(err, io.EOF) || rec[0] != recordLive || bytes.Equal(rec[3:recordHeader], sum[:]) {
			slot = cand
			break
		}
		_ = ofdLock(f, syscall.F_UNLCK, cand*recordSize)
	}
	l.slot = slot
	k.slots[slot] = l
	if _, err := f.WriteAt(encodeRecord(sum, l.owner), slot*recordSize); err != nil {
		_ = k.freeSlot(l)
		k.mu.Unlock()
		k.unreserve(l)
		return nil, fmt.Errorf("sqlitestore: writing lease record: %w", err)
	}
	k.mu.Unlock()
	l.prev = takeover(prev, l.owner, false)
	l.set.add(l)
	return l, nil
}

// clearRecord empties l's record, keeping its slot. k.mu is held.
func (k *leaseLocks) clearRecord(l *ofdLease) error {
	if l.slot < 0 || k.slots[l.slot] != l || k.f == nil {
		return nil
	}
	if _, err := k.f.WriteAt(make([]byte, recordHeader), l.slot*recordSize); err != nil {
		return fmt.Errorf("sqlitestore: clearing lease record: %w", err)
	}
	return nil
}

// freeSlot clears l's record and unlocks its slot. k.mu is held.
func (k *leaseLocks) freeSlot(l *ofdLease) error {
	if l.slot < 0 || k.slots[l.slot] != l {
		return nil
	}
	err := k.clearRecord(l)
	delete(k.slots, l.slot)
	if k.f != nil {
		if uerr := ofdLock(k.f, syscall.F_UNLCK, l.slot*recordSize); err == nil && uerr != nil {
			err = fmt.Errorf("sqlitestore: lease unlock: %w", uerr)
		}
	}
	return err
}

// holderOf names the live holder of the run with id hash sum as its record
// says, waiting up to probeGrace for a holder that has the run's lock but
// has not written its record yet. other: the lock is held for another run
// whose lock takes the same byte (a hash collision); the zero owner, not
// other, when no record appears (a slow holder).
func (k *leaseLocks) holderOf(f *os.File, sum [32]byte) (o polyloop.LeaseOwner, other bool) {
	deadline := time.Now().Add(probeGrace)
	for {
		o, found, other := k.findLive(f, sum)
		if found || other || time.Now().After(deadline) {
			return o, other
		}
		time.Sleep(time.Millisecond)
	}
}

// findLive finds a live record of the run with id hash sum held by another
// description than this Store's; other when there is none but a live
// record of another run whose lock takes the same byte.
func (k *leaseLocks) findLive(f *os.File, sum [32]byte) (o polyloop.LeaseOwner, found, other bool) {
	tbl, err := readAll(f)
	if err != nil {
		return polyloop.LeaseOwner{}, false, false
	}
	off := runLockOffset(sum)
	for i := int64(0); (i+1)*recordSize <= int64(len(tbl)); i++ {
		rec := tbl[i*recordSize : (i+1)*recordSize]
		if rec[0] != recordLive {
			continue
		}
		mine := bytes.Equal(rec[3:recordHeader], sum[:])
		if !mine && runLockOffset([32]byte(rec[3:recordHeader])) != off {
			continue
		}
		k.mu.Lock()
		own := k.slots[i] != nil
		k.mu.Unlock()
		if own {
			continue
		}
		if held, err := ofdHeld(f, i*recordSize); err != nil || !held {
			continue
		}
		if !mine {
			other = true
			continue
		}
		if o, ok := decodeRecord(rec); ok {
			return o, true, false
		}
	}
	return polyloop.LeaseOwner{}, false, other
}

var _ polyloop.LeaseProber = (*Store)(nil)

// LiveHolder implements polyloop.LeaseProber without taking a lock that an
// acquisition could meet: the run's lock is tested with F_OFD_GETLK and
// its holder read from its record. A run with a per-run lock file is
// probed as before 0052, with a shared flock tried and dropped at once (an
// acquisition racing it waits it out, up to probeGrace).
func (s *Store) LiveHolder(ctx context.Context, runID string) (polyloop.LeaseOwner, bool, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.LeaseOwner{}, false, err
	}
	if h := s.lk.holding(runID); h != nil {
		return h.owner, true, nil
	}
	f, err := os.Open(filepath.Join(s.leaseDir, leaseFileName(runID)))
	if err == nil {
		defer f.Close()
		return probeLockFile(f)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return polyloop.LeaseOwner{}, false, fmt.Errorf("sqlitestore: lease file: %w", err)
	}
	lf, err := s.lk.open(s.leaseDir, false)
	if err != nil || lf == nil {
		return polyloop.LeaseOwner{}, false, err
	}
	sum := sha256.Sum256([]byte(runID))
	held, err := ofdHeld(lf, runLockOffset(sum))
	if err != nil {
		return polyloop.LeaseOwner{}, false, fmt.Errorf("sqlitestore: probing lease: %w", err)
	}
	if !held {
		return polyloop.LeaseOwner{}, false, nil
	}
	o, other := s.lk.holderOf(lf, sum)
	return o, !other, nil
}

// ofdLock sets (F_WRLCK) or removes (F_UNLCK) f's lock on the byte at off,
// without waiting.
func ofdLock(f *os.File, typ int16, off int64) error {
	lk := syscall.Flock_t{Type: typ, Whence: io.SeekStart, Start: off, Len: 1}
	for {
		err := syscall.FcntlFlock(f.Fd(), fOFDSetlk, &lk)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// ofdHeld reports whether another description holds a lock on the byte at
// off.
func ofdHeld(f *os.File, off int64) (bool, error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart, Start: off, Len: 1}
	if err := syscall.FcntlFlock(f.Fd(), fOFDGetlk, &lk); err != nil {
		return false, err
	}
	return lk.Type != syscall.F_UNLCK, nil
}

// busy reports a lock held by another description.
func busy(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES)
}

// readAll reads the lease file's records.
func readAll(f *os.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: lease file: %w", err)
	}
	buf := make([]byte, st.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("sqlitestore: reading lease file: %w", err)
	}
	return buf[:n-n%recordSize], nil
}

// encodeRecord is a holder's record. An owner too long for it (a host name
// of hundreds of bytes) has its host cut.
func encodeRecord(sum [32]byte, o polyloop.LeaseOwner) []byte {
	data, _ := json.Marshal(o)
	for len(data) > recordSize-recordHeader && o.Host != "" {
		o.Host = o.Host[:len(o.Host)/2]
		data, _ = json.Marshal(o)
	}
	rec := make([]byte, recordSize)
	rec[0] = recordLive
	binary.BigEndian.PutUint16(rec[1:3], uint16(len(data)))
	copy(rec[3:recordHeader], sum[:])
	copy(rec[recordHeader:], data)
	return rec
}

// decodeRecord reads the owner a record names; false when it is being
// written or damaged.
func decodeRecord(rec []byte) (polyloop.LeaseOwner, bool) {
	var o polyloop.LeaseOwner
	n := int(binary.BigEndian.Uint16(rec[1:3]))
	if rec[0] != recordLive || n > recordSize-recordHeader {
		return o, false
	}
	if err := json.Unmarshal(rec[recordHeader:recordHeader+n], &o); err != nil {
		return polyloop.LeaseOwner{}, false
	}
	return o, true
}
