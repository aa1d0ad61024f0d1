package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
)

var (
	_ polyloop.Leaser      = (*Store)(nil)
	_ polyloop.LeaseProber = (*Store)(nil)
)

// The lease session's timing. The server ends the session of a client
// that vanished without closing its connection (a machine powered off, a
// network cut) once TCP gives up on it: tcp_user_timeout bounds the wait
// for an acknowledgement of data in flight, and keepalive probes (idle,
// interval, count) find a silent peer; both are set on the lease session.
// The holder itself checks its session every LeasePingInterval and gives
// up after LeasePingTimeout without an answer, which is well before the
// server frees the lock.
const (
	LeaseKeepaliveIdle     = 4 * time.Second
	LeaseKeepaliveInterval = 2 * time.Second
	LeaseKeepaliveCount    = 3
	LeaseUserTimeout       = 10 * time.Second
	LeasePingInterval      = time.Second
	LeasePingTimeout       = 3 * time.Second
	// LeaseDeadHolderBound is the documented bound within which the lease
	// of a holder that vanished without closing its connection is free:
	// the keepalive and user timeouts above, with margin.
	LeaseDeadHolderBound = 15 * time.Second
)

// maxLeaseTries bounds the retries of an acquisition that races others.
const maxLeaseTries = 20

// AcquireLease implements polyloop.Leaser with session-level advisory
// locks, all held on one dedicated connection of the Store (the lease
// session), apart from the pool.
//
// Liveness is the server's: when a holder's process dies its connection
// closes and PostgreSQL ends the session, dropping its locks at once; when
// its machine vanishes without closing the connection, the keepalive
// settings above end the session within LeaseDeadHolderBound. The row of
// the run in the leases table names the holder and is written only when a
// lease is acquired or released, never while it is held: a row that names
// a holder whose lock is free is a dead holder's.
//
// The lock's key is a 64-bit hash of the schema, the run id and the row's
// generation. A forced take-over cannot steal another session's lock: it
// locks the next generation's key and moves the row to it, and the old
// holder, which checks its rows every LeasePingInterval, finds another
// token there and closes Lost. The old holder's lock on the old generation
// is then worthless. A hash collision between two live runs can only make
// one of them be refused, never let two holders in.
//
// If the lease session fails (the server restarts, the network breaks, a
// check gets no answer within LeasePingTimeout), every lease of the Store
// is lost; the next acquisition opens a new session.
func (s *Store) AcquireLease(ctx context.Context, runID string, req polyloop.LeaseRequest) (polyloop.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.Owner.Token == "" {
		return nil, errors.New("pgstore: lease request without an owner token")
	}
	ls := &s.leases
	ls.mu.Lock()
	defer ls.mu.Unlock()
	conn, err := ls.connect(ctx, s)
	if err != nil {
		return nil, err
	}
	if len(ls.all) == 0 {
		// An idle session may have broken since its last check: test it
		// before trusting it, and replace it once.
		if err := conn.Ping(ctx); err != nil {
			ls.drop()
			if conn, err = ls.connect(ctx, s); err != nil {
				return nil, err
			}
		}
	}
	// The session's statements run on a context detached from the caller's
	// and bounded: a cancellation in the middle of one would break the
	// connection, and with it every other lease of the Store. The caller's
	// context is honoured between statements.
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), LeasePingTimeout)
	defer cancel()
	mine, err := s.stillMine(qctx, conn, runID)
	if err != nil {
		ls.failed(err)
		return nil, interpretError(ctx, "acquire lease", err)
	}
	if mine != nil && !req.TakeOver {
		return nil, &polyloop.LeaseHeldError{RunID: runID, Holder: mine.owner}
	}
	for try := range maxLeaseTries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l, err := s.tryAcquire(qctx, conn, runID, req, mine != nil, try == maxLeaseTries-1)
		var he heldError
		if errors.As(err, &he) {
			return nil, he.LeaseHeldError
		}
		if err != nil {
			ls.failed(err)
			return nil, interpretError(ctx, "acquire lease", err)
		}
		if l == nil {
			continue
		}
		if mine != nil {
			mine.markLost() // forced away by a holder of this very Store
		}
		return ls.register(l), nil
	}
	return nil, fmt.Errorf("pgstore: lease on %q: still racing other holders after %d tries", runID, maxLeaseTries)
}

// stillMine returns the live lease this Store holds on runID, checked
// against the run's row: a lease whose row names another token was taken
// over (the session's check may not have run yet) and is marked lost.
func (s *Store) stillMine(ctx context.Context, conn *pgx.Conn, runID string) (*pgLease, error) {
	mine := s.leases.live(runID)
	if mine == nil {
		return nil, nil
	}
	row, err := s.readLease(ctx, conn, runID)
	if err != nil {
		return nil, err
	}
	if row.owner.Token != mine.owner.Token {
		mine.markLost()
		delete(s.leases.held, runID)
		return nil, nil
	}
	return mine, nil
}

// leaseRow is a run's row in the leases table.
type leaseRow struct {
	found    bool
	gen      int64
	owner    polyloop.LeaseOwner
	released bool
}

// tryAcquire makes one attempt. It returns nil, nil when it lost a race and
// should be tried again; a *LeaseHeldError when the lease is held. mine
// says that this Store holds the lease itself (the session's locks are
// re-entrant, so its own lock cannot be tried).
func (s *Store) tryAcquire(ctx context.Context, conn *pgx.Conn, runID string, req polyloop.LeaseRequest, mine, last bool) (*pgLease, error) {
	row, err := s.readLease(ctx, conn, runID)
	if err != nil {
		return nil, err
	}
	if !mine {
		ok, err := tryLock(ctx, conn, s.leaseKey(runID, row.gen))
		if err != nil {
			return nil, err
		}
		if ok {
			return s.claim(ctx, conn, runID, row, row.gen, req.Owner, false)
		}
		if !req.TakeOver {
			if row.found && !row.released || last {
				return nil, heldError{&polyloop.LeaseHeldError{RunID: runID, Holder: row.owner}}
			}
			// Locked, but the row does not name the holder yet: it is
			// between its lock and its claim.
			time.Sleep(time.Millisecond)
			return nil, nil
		}
	}
	next := row.gen + 1
	ok, err := tryLock(ctx, conn, s.leaseKey(runID, next))
	if err != nil || !ok {
		return nil, err
	}
	return s.claim(ctx, conn, runID, row, next, req.Owner, true)
}

// heldError carries a refusal through tryAcquire without being taken for a
// session failure.
type heldError struct{ *polyloop.LeaseHeldError }

func (e heldError) Unwrap() error { return e.LeaseHeldError }

// claim writes the row for a lock just taken on generation gen, if the
// row is still at the generation read (row.gen): otherwise another
// acquisition moved it meanwhile, the lock is worthless, and claim unlocks
// it and returns nil, nil.
func (s *Store) claim(ctx context.Context, conn *pgx.Conn, runID string, row leaseRow, gen int64, owner polyloop.LeaseOwner, forced bool) (*pgLease, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	cur, err := scanLease(tx.QueryRow(ctx, s.leases.q.lockRow, runID))
	if err != nil {
		return nil, err
	}
	if cur.found != row.found || cur.found && cur.gen != row.gen {
		tx.Rollback(ctx)
		return nil, unlock(ctx, conn, s.leaseKey(runID, gen))
	}
	if _, err := tx.Exec(ctx, s.leases.q.claim, runID, gen, owner.Host, owner.PID, owner.Token, owner.Since.UnixNano()); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	l := &pgLease{runID: runID, gen: gen, owner: owner, key: s.leaseKey(runID, gen), lost: make(chan struct{})}
	switch {
	case forced:
		l.prev = &polyloop.LeaseTakeover{From: cur.owner, To: owner, Reason: polyloop.TakeoverForced}
	case cur.found && !cur.released:
		l.prev = &polyloop.LeaseTakeover{From: cur.owner, To: owner, Reason: polyloop.TakeoverHolderDead}
	}
	return l, nil
}

func (s *Store) readLease(ctx context.Context, conn *pgx.Conn, runID string) (leaseRow, error) {
	return scanLease(conn.QueryRow(ctx, s.leases.q.readRow, runID))
}

func scanLease(r pgx.Row) (leaseRow, error) {
	var row leaseRow
	var since int64
	err := r.Scan(&row.gen, &row.owner.Host, &row.owner.PID, &row.owner.Token, &since, &row.released)
	if errors.Is(err, pgx.ErrNoRows) {
		return leaseRow{}, nil
	}
	if err != nil {
		return leaseRow{}, err
	}
	row.found, row.owner.Since = true, time.Unix(0, since).UTC()
	return row, nil
}

func tryLock(ctx context.Context, conn *pgx.Conn, key int64) (bool, error) {
	var ok bool
	err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok)
	return ok, err
}

func unlock(ctx context.Context, conn *pgx.Conn, key int64) error {
	_, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key)
	return err
}

// leaseKey is the advisory lock key of a run's lease at a generation.
func (s *Store) leaseKey(runID string, gen int64) int64 {
	h := sha256.New()
	h.Write([]byte("polyloop.pgstore lease\x00" + s.schema + "\x00" + runID + "\x00" + strconv.FormatInt(gen, 10)))
	return int64(binary.BigEndian.Uint64(h.Sum(nil)))
}

// leaseQueries are the lease statements, with the schema's table filled in.
type leaseQueries struct{ readRow, lockRow, claim, release, check string }

func newLeaseQueries(schema string) leaseQueries {
	t := pgx.Identifier{schema, "leases"}.Sanitize()
	cols := `gen, host, pid, token, since, released`
	return leaseQueries{
		readRow: `SELECT ` + cols + ` FROM ` + t + ` WHERE run_id = $1`,
		lockRow: `SELECT ` + cols + ` FROM ` + t + ` WHERE run_id = $1 FOR UPDATE`,
		claim: `INSERT INTO ` + t + ` AS l (run_id, gen, host, pid, token, since, released) VALUES ($1, $2, $3, $4, $5, $6, false)
			ON CONFLICT (run_id) DO UPDATE SET gen = EXCLUDED.gen, host = EXCLUDED.host, pid = EXCLUDED.pid,
			token = EXCLUDED.token, since = EXCLUDED.since, released = false`,
		release: `UPDATE ` + t + ` SET released = true WHERE run_id = $1 AND token = $2`,
		check:   `SELECT run_id, token FROM ` + t + ` WHERE run_id = ANY($1)`,
	}
}

// leaseDialer sets client-side keepalive on the lease session's socket.
var leaseDialer = &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{Enable: true,
	Idle: LeaseKeepaliveIdle, Interval: LeaseKeepaliveInterval, Count: LeaseKeepaliveCount}}

// LiveHolder implements polyloop.LeaseProber by reading pg_locks: is the
// lock of the run's current generation granted to any session? It takes no
// lock.
func (s *Store) LiveHolder(ctx context.Context, runID string) (polyloop.LeaseOwner, bool, error) {
	row, err := scanLease(s.pool.QueryRow(ctx, newLeaseQueries(s.schema).readRow, runID))
	if err != nil {
		return polyloop.LeaseOwner{}, false, interpretError(ctx, "read lease", err)
	}
	var live bool
	err = s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = $1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`, s.leaseKey(runID, row.gen)).Scan(&live)
	if err != nil {
		return polyloop.LeaseOwner{}, false, interpretError(ctx, "probe lease", err)
	}
	if !live {
		return polyloop.LeaseOwner{}, false, nil
	}
	return row.owner, true, nil
}
