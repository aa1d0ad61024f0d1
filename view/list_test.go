package view_test

import (
	"context"
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/view"
)

// putRuns puts n runs into st, three per start time (ties broken by run
// id), every fifth unfinished; returns their ids oldest first.
func putRuns(st *memstore.Store, n int) []string {
	var ids []string
	for i := range n {
		id := fmt.Sprintf("r%04d", i)
		at := runfixture.Base.Add(time.Duration(i/3) * time.Second)
		recs := []polyloop.Record{
			{Seq: 0, At: at, Body: &polyloop.RunStarted{RunID: id, SnapshotHash: "sha256:h", Snapshot: polyloop.Snapshot{Agent: "a"}}},
			{Seq: 1, At: at, Body: &polyloop.ModelCallIntent{Step: 1, CallID: "m1.1", Attempt: 1}},
		}
		if i%5 != 0 {
			recs = append(recs, polyloop.Record{Seq: 2, At: at, Body: &polyloop.RunFinished{StopReason: polyloop.StopCompleted,
				Totals: polyloop.Totals{Steps: i % 7, InputTokens: int64(i)}}})
		}
		st.Put(id, recs)
		ids = append(ids, id)
	}
	return ids
}

var (
	runLink  = regexp.MustCompile(`class="runlink" href="/run\?id=([^"]+)"`)
	nextLink = regexp.MustCompile(`id="next" href="([^"]+)"`)
	prevLink = regexp.MustCompile(`id="prev" href="([^"]+)"`)
)

func pageIDs(body string) []string {
	var ids []string
	for _, m := range runLink.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func link(re *regexp.Regexp, body string) string {
	m := re.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// TestPagesWalkEveryRun follows next links through every page of a store
// and back with previous links: each run once, in order, ties included.
func TestPagesWalkEveryRun(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	ids := putRuns(st, 103)
	s, err := view.New(view.Options{Store: st, PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, order := range []string{"/", "/?sort=old"} {
		want := slices.Clone(ids)
		if order == "/" {
			slices.Reverse(want)
		}
		var got []string
		var pages []string
		for u := order; u != ""; {
			body := mustGet(t, s, u)
			pages = append(pages, u)
			got = append(got, pageIDs(body)...)
			if len(pages) > 20 {
				t.Fatal("more pages than runs")
			}
			u = link(nextLink, body)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: pages give %d runs %q…, want %d", order, len(got), got[:min(len(got), 12)], len(want))
		}
		// Back from the last page: the same pages, in reverse.
		var back []string
		u := pages[len(pages)-1]
		for {
			body := mustGet(t, s, u)
			back = append(pageIDs(body), back...)
			if u = link(prevLink, body); u == "" {
				break
			}
		}
		if !slices.Equal(back, want) {
			t.Fatalf("%s: previous links give %q…", order, back[:min(len(back), 12)])
		}
	}
	// Other sorts page in memory.
	var got []string
	for u := "/?sort=steps"; u != ""; {
		body := mustGet(t, s, u)
		got = append(got, pageIDs(body)...)
		u = link(nextLink, body)
	}
	if len(got) != len(ids) {
		t.Errorf("sort by steps: %d runs over the pages, want %d", len(got), len(ids))
	}
}

// countingStore counts the logs read and the summaries listed.
type countingStore struct {
	*memstore.Store
	reads, listed atomic.Int64
}

func (c *countingStore) ReadRows(ctx context.Context, id string) ([]polyloop.Row, error) {
	c.reads.Add(1)
	return c.Store.ReadRows(ctx, id)
}

// ReadRowsFrom counts a log read as it is folded once, at its first chunk.
func (c *countingStore) ReadRowsFrom(ctx context.Context, id string, from int64, limit int) ([]polyloop.Row, error) {
	if from == 0 {
		c.reads.Add(1)
	}
	return c.Store.ReadRowsFrom(ctx, id, from, limit)
}

func (c *countingStore) ListRuns(ctx context.Context, f polyloop.RunFilter) ([]polyloop.RunSummary, error) {
	runs, err := c.Store.ListRuns(ctx, f)
	c.listed.Add(int64(len(runs)))
	return runs, err
}

// TestListReadsOnePage: a page of a big store lists one page of summaries
// (and one more), and reads only the logs of the page's unfinished runs;
// sorting by another column is refused beyond MaxSort.
func TestListReadsOnePage(t *testing.T) {
	t.Parallel()
	st := &countingStore{Store: memstore.New()}
	putRuns(st.Store, 2000)
	s, err := view.New(view.Options{Store: st, PageSize: 50, MaxSort: 1000})
	if err != nil {
		t.Fatal(err)
	}
	body := mustGet(t, s, "/")
	if n := len(pageIDs(body)); n != 50 {
		t.Fatalf("%d runs on the page", n)
	}
	if listed, reads := st.listed.Load(), st.reads.Load(); listed != 51 || reads != 10 {
		t.Errorf("one page listed %d summaries and read %d logs; want 51 and the 10 unfinished runs' logs", listed, reads)
	}
	st.listed.Store(0)
	body = mustGet(t, s, "/?sort=cost")
	if !strings.Contains(body, "More than 1000 runs match") || st.listed.Load() > 1001+51 {
		t.Errorf("sorting 2000 runs by cost: listed %d summaries, or the page does not say why it did not sort", st.listed.Load())
	}
}
