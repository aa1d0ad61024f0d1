package pgstore

import (
	"sync"

	"github.com/polyloop/polyloop"
)

// maxCachedRuns bounds the summary cache; past it the cache starts over.
const maxCachedRuns = 4096

// summaryCache keeps the summary of each run as this Store's last
// committed Append left it, so that an Append builds on it without reading
// the runs table. Another Store — another process, another machine — may
// have appended since: the entry is then behind the database, never ahead
// (records are never deleted), and the Append's insert of a seq that exists
// fails on the records primary key (a conflict, after which the entry is
// dropped). An entry is dropped too when an Append's outcome is unknown.
type summaryCache struct {
	mu sync.Mutex
	m  map[string]polyloop.RunSummary
}

func (c *summaryCache) get(runID string) (polyloop.RunSummary, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum, ok := c.m[runID]
	return sum, ok
}

// put records a committed summary; a finished run's is dropped, as no more
// Appends are expected.
func (c *summaryCache) put(sum polyloop.RunSummary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sum.Finished {
		delete(c.m, sum.RunID)
		return
	}
	if c.m == nil || len(c.m) >= maxCachedRuns {
		c.m = map[string]polyloop.RunSummary{}
	}
	c.m[sum.RunID] = sum
}

func (c *summaryCache) drop(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, runID)
}
