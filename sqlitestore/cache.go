package sqlitestore

import (
	"context"
	"database/sql"

	"github.com/polyloop/polyloop"
)

// maxCachedRuns bounds the summary cache; past it the cache starts over.
const maxCachedRuns = 4096

// summaryCache keeps the summaries of the runs this Store wrote, so that the
// writer checks the sequence rule without reading the runs table for every
// Append. Only the leader (commit.go) uses it.
//
// Another connection — another Store on the file, another process — may
// write between two of our transactions. SQLite's data_version, read inside
// each write transaction (which holds the write lock), changes exactly when
// another connection committed since our last read; the cache is then
// dropped. A failed commit drops it too, since its outcome is unknown.
type summaryCache struct {
	version int64
	valid   bool
	m       map[string]polyloop.RunSummary
}

// sync drops the cache if another connection committed since the last
// transaction; dataVersion is the prepared PRAGMA data_version.
func (c *summaryCache) sync(ctx context.Context, tx *sql.Tx, dataVersion *sql.Stmt) error {
	var v int64
	if err := tx.StmtContext(ctx, dataVersion).QueryRowContext(ctx).Scan(&v); err != nil {
		return interpretError("read data_version", err)
	}
	if !c.valid || v != c.version {
		c.m = map[string]polyloop.RunSummary{}
		c.version, c.valid = v, true
	}
	return nil
}

func (c *summaryCache) reset() { c.valid, c.m = false, nil }

func (c *summaryCache) get(runID string) (polyloop.RunSummary, bool) {
	sum, ok := c.m[runID]
	return sum, ok
}

// commit records the summaries of a committed transaction. After a careful
// transaction the cache is dropped rather than trusted.
func (c *summaryCache) commit(next map[string]polyloop.RunSummary, careful bool) {
	if careful || !c.valid {
		c.reset()
		return
	}
	if len(c.m)+len(next) > maxCachedRuns {
		c.m = map[string]polyloop.RunSummary{}
	}
	for id, sum := range next {
		if sum.Finished {
			delete(c.m, id) // no more Appends are expected
		} else {
			c.m[id] = sum
		}
	}
}
