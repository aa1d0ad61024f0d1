package pgstore

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
)

// leaseSession is the Store's dedicated connection holding its leases'
// advisory locks. It is opened by the first acquisition and kept until
// Store.Close, so that a process driving runs one after another pays for
// one connection; a session found broken is replaced by the next
// acquisition. mu serializes every use of the connection.
type leaseSession struct {
	mu   sync.Mutex
	conn *pgx.Conn
	id   int // counts connections: a lease belongs to one
	q    leaseQueries
	held map[string]*pgLease // live leases by run id
	all  map[*pgLease]bool   // every lease not yet released
	stop chan struct{}       // closes the pinger of conn
	done chan struct{}       // closed when that pinger has returned
}

// live returns the lease this Store holds on runID, if it is not lost.
func (ls *leaseSession) live(runID string) *pgLease {
	l := ls.held[runID]
	if l == nil || isClosed(l.lost) {
		return nil
	}
	return l
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// connect opens the lease session if it is not open, with the keepalive
// settings that bound a vanished client's lifetime on the server.
func (ls *leaseSession) connect(ctx context.Context, s *Store) (*pgx.Conn, error) {
	if ls.conn != nil && !ls.conn.IsClosed() {
		return ls.conn, nil
	}
	cfg := s.pool.Config().ConnConfig.Copy()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = "polyloop lease session"
	// The rows name holders and generations; a lock, not a row, is the
	// lease, and a server crash ends every session and so every lease. So
	// the lease session's commits need not wait for the WAL to be flushed:
	// a row lost in a server crash can only make a later take-over record
	// name an older holder.
	cfg.RuntimeParams["synchronous_commit"] = "off"
	cfg.RuntimeParams["tcp_keepalives_idle"] = seconds(LeaseKeepaliveIdle)
	cfg.RuntimeParams["tcp_keepalives_interval"] = seconds(LeaseKeepaliveInterval)
	cfg.RuntimeParams["tcp_keepalives_count"] = strconv.Itoa(LeaseKeepaliveCount)
	cfg.RuntimeParams["tcp_user_timeout"] = strconv.FormatInt(LeaseUserTimeout.Milliseconds(), 10)
	cfg.DialFunc = leaseDialer.DialContext
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, interpretError(ctx, "open the lease session", err)
	}
	ls.conn, ls.q = conn, newLeaseQueries(s.schema)
	ls.id++
	ls.stop, ls.done = make(chan struct{}), make(chan struct{})
	go ls.ping(conn, ls.stop, ls.done)
	return conn, nil
}

func seconds(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

func (ls *leaseSession) register(l *pgLease) *pgLease {
	if ls.held == nil {
		ls.held, ls.all = map[string]*pgLease{}, map[*pgLease]bool{}
	}
	l.ls, l.session = ls, ls.id
	ls.held[l.runID] = l
	ls.all[l] = true
	return l
}

// failed handles an error met on the session: a connection that broke
// takes every lease with it.
func (ls *leaseSession) failed(err error) {
	var he heldError
	if errors.As(err, &he) {
		return
	}
	if ls.conn != nil && ls.conn.IsClosed() {
		ls.drop()
	}
}

// drop marks every lease lost and closes the session.
func (ls *leaseSession) drop() {
	for l := range ls.all {
		l.markLost()
	}
	clear(ls.held)
	ls.closeConn()
}

// closeConn ends the session; its pinger returns on its own.
func (ls *leaseSession) closeConn() {
	if ls.conn == nil {
		return
	}
	close(ls.stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ls.conn.Close(ctx)
	ls.conn = nil
}

// close is Store.Close's: every lease is lost, the session ends, and its
// pinger has returned when close does.
func (ls *leaseSession) close() {
	ls.mu.Lock()
	done := ls.done
	ls.drop()
	ls.mu.Unlock()
	if done != nil {
		<-done
	}
}

// ping checks the session every LeasePingInterval: an error or no answer
// within LeasePingTimeout drops it; a lease whose row names another token
// was taken over and is lost.
func (ls *leaseSession) ping(conn *pgx.Conn, stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(LeasePingInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ls.mu.Lock()
		if ls.conn != conn {
			ls.mu.Unlock()
			return
		}
		if err := ls.check(conn); err != nil {
			ls.drop()
		}
		ls.mu.Unlock()
	}
}

func (ls *leaseSession) check(conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), LeasePingTimeout)
	defer cancel()
	ids := make([]string, 0, len(ls.held))
	for id := range ls.held {
		ids = append(ids, id)
	}
	rows, err := conn.Query(ctx, ls.q.check, ids)
	if err != nil {
		return err
	}
	tokens := map[string]string{}
	for rows.Next() {
		var id, tok string
		if err := rows.Scan(&id, &tok); err != nil {
			rows.Close()
			return err
		}
		tokens[id] = tok
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for id, l := range ls.held {
		if tokens[id] != l.owner.Token {
			l.markLost()
			delete(ls.held, id)
		}
	}
	return nil
}

// pgLease is a lease held on the lease session.
type pgLease struct {
	ls       *leaseSession
	session  int
	runID    string
	gen, key int64
	owner    polyloop.LeaseOwner
	prev     *polyloop.LeaseTakeover
	lost     chan struct{}
	once     sync.Once
	released bool
	err      error
}

func (l *pgLease) TakenOver() *polyloop.LeaseTakeover { return l.prev }
func (l *pgLease) Lost() <-chan struct{}              { return l.lost }
func (l *pgLease) markLost()                          { l.once.Do(func() { close(l.lost) }) }

// Release implements polyloop.Lease: the row says released (if it is
// still this lease's) and the lock is unlocked. On an error the session is
// closed, which frees the lock all the same.
func (l *pgLease) Release(ctx context.Context) error {
	ls := l.ls
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l.released {
		return l.err
	}
	l.released = true
	delete(ls.all, l)
	if ls.held[l.runID] == l {
		delete(ls.held, l.runID)
	}
	l.markLost()
	if l.session == ls.id && ls.conn != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), LeasePingTimeout)
		defer cancel()
		_, err := ls.conn.Exec(ctx, ls.q.release, l.runID, l.owner.Token)
		if err == nil {
			err = unlock(ctx, ls.conn, l.key)
		}
		if err != nil {
			l.err = interpretError(ctx, "release lease", err)
			ls.drop()
		}
	}
	return l.err
}
