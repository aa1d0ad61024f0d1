package pgstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/polyloop/polyloop"

	"github.com/polyloop/polyloop/internal/pgpool"
)

// Options configure a Store. A nil *Options takes the defaults.
type Options struct {
	// Schema is the PostgreSQL schema holding the tables (default
	// DefaultSchema). It is created if missing.
	Schema string
	// MaxConns bounds the pool (0: the DSN's pool_max_conns, else
	// pgxpool's default of max(4, GOMAXPROCS)). Group transactions hold
	// one connection each (MaxGroups of them at most); an Append that must
	// read its run's summary (the first Append of a resumed run) holds one
	// for that round trip.
	MaxConns int32
	// MaxGroups bounds the group transactions under way at once (default
	// DefaultMaxGroups): Appends arriving while that many are in flight
	// queue and share the next one.
	MaxGroups int
	// GroupTimeout bounds each group transaction, from acquiring its
	// connection to its commit (default DefaultGroupTimeout). A group is
	// shared by the Appends it took, so no one caller's context may end
	// it; this bound keeps a hung connection from stalling the Store for
	// ever. When it passes, every Append of the group fails with an error
	// wrapping context.DeadlineExceeded, its outcome unknown.
	GroupTimeout time.Duration
	// ReadOnly opens the store for reading only, as a role that may only
	// SELECT: Open reads the schema version and neither creates nor
	// migrates anything (no lock, no write); a schema that is missing or
	// older than SchemaVersion is ErrNeedsMigration, a newer one
	// ErrSchemaTooNew. Writing through a read-only Store is left to the
	// server to refuse.
	ReadOnly bool
}

// DefaultGroupTimeout is the default of Options.GroupTimeout: far beyond
// any healthy commit.
const DefaultGroupTimeout = 2 * time.Minute

// DefaultMaxGroups is the default of Options.MaxGroups.
const DefaultMaxGroups = 2

// DefaultSchema is the schema used when Options.Schema is empty.
const DefaultSchema = "polyloop"

// Store is a polyloop.Store and polyloop.RunLister on PostgreSQL. It is safe
// for concurrent use, and any number of Stores on any number of machines may
// share one database: the sequence rule fences them.
type Store struct {
	pool   *pgxpool.Pool
	schema string
	q      queries
	stats  counters
	c      committer    // group commit (commit.go)
	cache  summaryCache // the runs' summaries as this Store committed them
	// maxGroups is Options.MaxGroups.
	maxGroups int
	// groupTimeout is Options.GroupTimeout.
	groupTimeout time.Duration
	// maxBatchBytes is DefaultMaxBatchBytes; tests lower it.
	maxBatchBytes int
	leases        leaseSession // lease.go
	// afterRead, when set (tests only), runs for each Append on the
	// connection of its transaction, once the summary it builds on is
	// known and before its records are sent.
	afterRead func(ctx context.Context, conn *pgx.Conn) error
	// failInBatch, when set (tests only), is asked before each Append's
	// batch is sent; true adds a failing statement after the writes.
	failInBatch func() bool
	// afterSend, when set (tests only), runs inside Append after its batch
	// was sent and before its result is read.
	afterSend func()
}

var (
	_ polyloop.Store     = (*Store)(nil)
	_ polyloop.RunLister = (*Store)(nil)
)

// Open connects to the database at dsn (a PostgreSQL URL or keyword/value
// string, see pgxpool.ParseConfig), creates the schema and its tables if
// needed and migrates them forward. It fails with ErrSchemaTooNew when the
// schema was written by a newer version of this package.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	pool, err := pgpool.Open(ctx, dsn, o.MaxConns)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if o.MaxGroups <= 0 {
		o.MaxGroups = DefaultMaxGroups
	}
	if o.GroupTimeout <= 0 {
		o.GroupTimeout = DefaultGroupTimeout
	}
	s := &Store{pool: pool, schema: o.Schema, q: newQueries(o.Schema), maxGroups: o.MaxGroups,
		groupTimeout: o.GroupTimeout, maxBatchBytes: DefaultMaxBatchBytes}
	open := s.migrate
	if o.ReadOnly {
		open = s.checkReadOnly
	}
	if err := open(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the pool, waiting for connections in use to be released.
func (s *Store) Close() error {
	s.leases.close()
	s.pool.Close()
	return nil
}

// Stats are counters since Open.
type Stats struct {
	// Appends counts Appends that returned nil.
	Appends int64
	// Commits counts committed write transactions: PostgreSQL syncs its
	// WAL at each. Commits/Appends < 1 shows group commit at work.
	Commits int64
	// Conflicts counts Appends refused with polyloop.ErrSeqConflict.
	Conflicts int64
}

type counters struct{ appends, commits, conflicts atomic.Int64 }

// Stats returns the counters.
func (s *Store) Stats() Stats {
	return Stats{Appends: s.stats.appends.Load(), Commits: s.stats.commits.Load(), Conflicts: s.stats.conflicts.Load()}
}
