package view

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runstats"
)

// listQuery is the state of the runs list, all of it in the URL.
type listQuery struct {
	Agent, Stop, Status, Sweep string
	// Snapshot is a snapshot hash (snapshot=: the same inputs; by=hash
	// groups by the agent configuration hash, another hash).
	Snapshot string
	// Task is a text the task must contain.
	Task string
	// Sort is "new" (default), "old", "steps", "tokens" or "cost".
	Sort string
	// After and Before are page cursors (start-time sorts); Page is the
	// page number of the other sorts.
	After, Before string
	Page          int
	// By groups statistics ("", "agent", "hash": the agent
	// configuration, "snapshot").
	By string
}

var sorts = []string{"new", "old", "steps", "tokens", "cost"}

// parseList reads the list's state from a URL, refusing what it cannot
// mean.
func parseList(v url.Values) (listQuery, error) {
	q := listQuery{Agent: v.Get("agent"), Snapshot: v.Get("snapshot"), Stop: v.Get("stop"), Status: v.Get("status"),
		Sweep: v.Get("sweep"), Task: v.Get("task"), Sort: v.Get("sort"), After: v.Get("after"), Before: v.Get("before"), By: v.Get("by")}
	if q.Sort == "" {
		q.Sort = "new"
	}
	if !slices.Contains(sorts, q.Sort) {
		return q, fmt.Errorf("sort=%q: expected one of %s", q.Sort, strings.Join(sorts, ", "))
	}
	if q.Stop != "" && !polyloop.StopReason(q.Stop).Valid() {
		return q, fmt.Errorf("stop=%q is not a stop reason", q.Stop)
	}
	if q.Status != "" && q.Status != "finished" && q.Status != "unfinished" {
		return q, fmt.Errorf("status=%q: expected finished or unfinished", q.Status)
	}
	if q.By != "" && !slices.Contains(runstats.Groupings, q.By) {
		return q, fmt.Errorf("by=%q: expected agent, hash or snapshot", q.By)
	}
	var err error
	if q.Page, err = parsePage(v); err != nil {
		return q, err
	}
	for _, c := range []string{q.After, q.Before} {
		if _, err := parseCursor(c); err != nil {
			return q, err
		}
	}
	return q, nil
}

// filter is the query's RunFilter (no order, no limit).
func (q listQuery) filter() polyloop.RunFilter {
	f := polyloop.RunFilter{Agent: q.Agent, SnapshotHash: q.Snapshot, StopReason: polyloop.StopReason(q.Stop), TaskContains: q.Task}
	switch q.Status {
	case "finished":
		yes := true
		f.Finished = &yes
	case "unfinished":
		no := false
		f.Finished = &no
	}
	if q.Stop != "" {
		yes := true
		f.Finished = &yes
	}
	return f
}

// values are the query's URL parameters, empty ones left out.
func (q listQuery) values() url.Values {
	v := url.Values{}
	set := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	set("agent", q.Agent)
	set("snapshot", q.Snapshot)
	set("stop", q.Stop)
	set("status", q.Status)
	set("sweep", q.Sweep)
	set("task", q.Task)
	if q.Sort != "new" {
		set("sort", q.Sort)
	}
	set("after", q.After)
	set("before", q.Before)
	if q.Page > 1 {
		v.Set("page", strconv.Itoa(q.Page))
	}
	set("by", q.By)
	return v
}

// URL is the list at this state; With and Sorted derive other states.
func (q listQuery) URL(path string) string {
	if enc := q.values().Encode(); enc != "" {
		return path + "?" + enc
	}
	return path
}

// SortURL is the list sorted by key, from its first page.
func (q listQuery) SortURL(key string) string {
	q.Sort, q.After, q.Before, q.Page = key, "", "", 0
	return q.URL("/")
}

// StatsURL is the statistics of the list's runs.
func (q listQuery) StatsURL() string {
	q.Sort, q.After, q.Before, q.Page = "new", "", "", 0
	return q.URL("/stats")
}

// ByURL is the statistics grouped by key.
func (q listQuery) ByURL(key string) string {
	q.Sort, q.After, q.Before, q.Page, q.By = "new", "", "", 0, key
	return q.URL("/stats")
}

// cursor encodes a position for the URL: start time in Unix nanoseconds
// ("-" for none), a dot, the run id.
func cursor(p polyloop.RunPosition) string {
	t := "-"
	if !p.StartedAt.IsZero() {
		t = strconv.FormatInt(p.StartedAt.UnixNano(), 10)
	}
	return t + "." + p.RunID
}

func parseCursor(c string) (*polyloop.RunPosition, error) {
	if c == "" {
		return nil, nil
	}
	t, id, ok := strings.Cut(c, ".")
	if !ok {
		return nil, fmt.Errorf("page cursor %q: expected TIME.RUN_ID", c)
	}
	p := &polyloop.RunPosition{RunID: id}
	if t != "-" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("page cursor %q: the time is not Unix nanoseconds", c)
		}
		p.StartedAt = time.Unix(0, n).UTC()
	}
	return p, nil
}

// runRow is one row of the runs list.
type runRow struct {
	polyloop.RunSummary
	Ann *Annotation
}

// Score is the row's first score, or nil.
func (r runRow) Score() *Score {
	if r.Ann == nil || len(r.Ann.Scores) == 0 {
		return nil
	}
	return &r.Ann.Scores[0]
}

// runsPage is the data of the runs list.
type runsPage struct {
	Title     string
	Q         listQuery
	Rows      []runRow
	Sweeps    bool
	Agents    []string
	StopOpts  []polyloop.StopReason
	Sorts     []string
	Prev      string
	Next      string
	Note      string
	PageSize  int
	SortLimit int
}

func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	q, err := parseList(r.URL.Query())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	p := &runsPage{Title: "Runs", Q: q, Sweeps: s.opts.Sweeps != nil, StopOpts: runstats.StopReasons, Sorts: sorts,
		PageSize: s.opts.PageSize, SortLimit: s.opts.MaxSort}
	var rows []polyloop.RunSummary
	switch {
	case q.Sweep != "":
		rows, err = s.sweepPage(r.Context(), q, p)
	case q.Sort == "new" || q.Sort == "old":
		rows, err = s.keysetPage(r.Context(), q, p)
	default:
		rows, err = s.sortedPage(r.Context(), q, p)
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	if err := runstats.FillTotals(r.Context(), s.opts.Store, rows); err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	if p.Rows, err = s.annotate(r.Context(), rows); err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	s.render(w, r, "runs", p)
}

// keysetPage reads one page in start order through the store's cursor:
// one page and one run more, to know whether another page follows.
func (s *Server) keysetPage(ctx context.Context, q listQuery, p *runsPage) ([]polyloop.RunSummary, error) {
	f := q.filter()
	desc := q.Sort == "new"
	back := q.Before != ""
	f.Limit, f.Descending = s.opts.PageSize+1, desc != back
	if back {
		f.After, _ = parseCursor(q.Before)
	} else {
		f.After, _ = parseCursor(q.After)
	}
	rows, err := s.opts.Store.ListRuns(ctx, f)
	if err != nil {
		return nil, err
	}
	more := len(rows) > s.opts.PageSize
	if more {
		rows = rows[:s.opts.PageSize]
	}
	if back {
		slices.Reverse(rows)
	}
	if len(rows) == 0 {
		return rows, nil
	}
	first, last := cursor(rows[0].Position()), cursor(rows[len(rows)-1].Position())
	link := func(after, before string) string {
		q2 := q
		q2.After, q2.Before = after, before
		return q2.URL("/")
	}
	if (back && more) || (!back && q.After != "") {
		p.Prev = link("", first)
	}
	if (!back && more) || back {
		p.Next = link(last, "")
	}
	return rows, nil
}

// sortedPage sorts by a column other than the start in memory, over at
// most MaxSort runs.
func (s *Server) sortedPage(ctx context.Context, q listQuery, p *runsPage) ([]polyloop.RunSummary, error) {
	f := q.filter()
	f.Limit = s.opts.MaxSort + 1
	rows, err := s.opts.Store.ListRuns(ctx, f)
	if err != nil {
		return nil, err
	}
	if len(rows) > s.opts.MaxSort {
		p.Note = fmt.Sprintf("More than %d runs match: sorting by %s needs a narrower filter; listed newest first instead.", s.opts.MaxSort, q.Sort)
		q.Sort = "new"
		p.Q = q
		return s.keysetPage(ctx, q, p)
	}
	sortRows(rows, q.Sort)
	return s.offsetPage(rows, q, p), nil
}

// sortRows sorts by a total, largest first; unfinished runs (whose totals
// the summaries lack) last, newest first.
func sortRows(rows []polyloop.RunSummary, key string) {
	val := func(r polyloop.RunSummary) float64 {
		switch key {
		case "steps":
			return float64(r.Totals.Steps)
		case "tokens":
			return float64(r.Totals.Tokens())
		}
		return r.Totals.CostUSD
	}
	slices.SortStableFunc(rows, func(a, b polyloop.RunSummary) int {
		if (a.Totals == nil) != (b.Totals == nil) {
			if a.Totals == nil {
				return 1
			}
			return -1
		}
		if a.Totals != nil {
			if c := cmp.Compare(val(b), val(a)); c != 0 {
				return c
			}
		}
		if b.Position().Before(a.Position()) {
			return -1
		}
		return 1
	})
}

// offsetPage cuts page q.Page out of rows held in memory.
func (s *Server) offsetPage(rows []polyloop.RunSummary, q listQuery, p *runsPage) []polyloop.RunSummary {
	page := max(q.Page, 1)
	from := min((page-1)*s.opts.PageSize, len(rows)) // page, PageSize ≤ MaxViewPage: no overflow
	to := min(from+s.opts.PageSize, len(rows))
	if page > 1 {
		q2 := q
		q2.Page = page - 1
		p.Prev = q2.URL("/")
	}
	if to < len(rows) {
		q2 := q
		q2.Page = page + 1
		p.Next = q2.URL("/")
	}
	return rows[from:to]
}

// sweepPage lists one sweep's runs, filtered and sorted in memory.
func (s *Server) sweepPage(ctx context.Context, q listQuery, p *runsPage) ([]polyloop.RunSummary, error) {
	if s.opts.Sweeps == nil {
		return nil, fmt.Errorf("sweep=%q: this view has no sweeps", q.Sweep)
	}
	all, _, err := s.opts.Sweeps.Runs(ctx, q.Sweep)
	if err != nil {
		return nil, err
	}
	f := q.filter()
	rows := all[:0:0]
	for _, r := range all {
		if f.Matches(r) {
			rows = append(rows, r)
		}
	}
	switch q.Sort {
	case "new":
		slices.Reverse(rows)
	case "old":
	default:
		sortRows(rows, q.Sort)
	}
	return s.offsetPage(rows, q, p), nil
}

// annotate pairs each run with what the sweeps know of it.
func (s *Server) annotate(ctx context.Context, rows []polyloop.RunSummary) ([]runRow, error) {
	out := make([]runRow, len(rows))
	var anns map[string]Annotation
	if s.opts.Sweeps != nil && len(rows) > 0 {
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.RunID
		}
		var err error
		if anns, err = s.opts.Sweeps.Annotate(ctx, ids); err != nil {
			return nil, err
		}
	}
	for i, r := range rows {
		out[i].RunSummary = r
		if a, ok := anns[r.RunID]; ok {
			out[i].Ann = &a
		}
	}
	return out, nil
}
