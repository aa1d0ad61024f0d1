package view

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	sweeps "github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// sweepPage is the data of a sweep's page: its statistics, as polyloop
// stats --sweep computes them, and its samples table.
type sweepPage struct {
	Title     string
	Q         sweepQuery
	Groupings []string
	Stats     *sweeps.Stats
	Groups    []sweepGroup
	// Samples holds one page of the samples table (Options.StepsPerPage
	// rows, ?page=N): the server reads the sweep's ledger page by page and
	// keeps only the rows up to the page's end, so its memory is bounded
	// by the page, not the sweep (sweep.SampleQuery.Limit).
	Samples *sweeps.Samples
	Rows    []sweeps.Sample
	Window  window
}

// sweepGroup is one group of a sweep's statistics, its runs' part with its
// charts.
type sweepGroup struct {
	*sweeps.GroupStats
	RunsView groupView
	// Pass pairs each k's pass@k and pass^k.
	Pass []passRow
}

// passRow is pass@k and pass^k at one k.
type passRow struct {
	K       int
	At, Hat *sweeps.PassAtK
}

// sweepQuery is a sweep page's state in its URL.
type sweepQuery struct {
	Name, By string
	// Samples are the samples table's filters and order.
	Samples sweeps.SampleQuery
	// Page is the samples table's page (0: the first).
	Page int
}

var sweepGroupings = []string{sweeps.ByNone, sweeps.ByAgent, sweeps.ByHash, sweeps.ByTask, sweeps.ByEpoch}

// parseSweep reads a sweep page's query.
func parseSweep(v url.Values) (sweepQuery, error) {
	q := sweepQuery{Name: v.Get("name"), By: v.Get("by"), Samples: sweeps.SampleQuery{Failed: v.Get("failed") == "1",
		Scorer: v.Get("scorer"), Task: v.Get("task"), Agent: v.Get("agent"), Sort: v.Get("sort"), Desc: v.Get("desc") == "1"}}
	if q.Name == "" {
		return q, errors.New("name=: which sweep?")
	}
	if !slices.Contains(sweepGroupings, q.By) {
		return q, fmt.Errorf("by=%q: expected agent, hash, task or epoch", q.By)
	}
	if b := v.Get("below"); b != "" {
		x, err := strconv.ParseFloat(b, 64)
		if err != nil {
			return q, fmt.Errorf("below=%q: expected a number", b)
		}
		q.Samples.Below = &x
	}
	var err error
	if q.Page, err = parsePage(v); err != nil {
		return q, err
	}
	return q, nil
}

// URL is the page with the query, changed by set (key, value pairs; an
// empty value drops the key).
func (q sweepQuery) URL(set ...string) string {
	v := url.Values{"name": {q.Name}}
	put := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	put("by", q.By)
	s := q.Samples
	if s.Failed {
		v.Set("failed", "1")
	}
	put("scorer", s.Scorer)
	if s.Below != nil {
		v.Set("below", strconv.FormatFloat(*s.Below, 'g', -1, 64))
	}
	put("task", s.Task)
	put("agent", s.Agent)
	if s.Sort != "run" {
		put("sort", s.Sort)
	}
	if s.Desc {
		v.Set("desc", "1")
	}
	for i := 0; i+1 < len(set); i += 2 {
		v.Del(set[i])
		put(set[i], set[i+1])
	}
	return "/sweep?" + v.Encode()
}

// SortURL is the page sorted by key: ascending, or descending when it is
// sorted by key ascending already.
func (q sweepQuery) SortURL(key string) string {
	desc := ""
	if q.Samples.Sort == key && !q.Samples.Desc {
		desc = "1"
	}
	return q.URL("sort", key, "desc", desc)
}

func (s *Server) sweep(w http.ResponseWriter, r *http.Request) {
	q, err := parseSweep(r.URL.Query())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if s.opts.Sweeps == nil {
		s.fail(w, r, http.StatusNotFound, errors.New("this view has no sweeps"))
		return
	}
	st, err := s.opts.Sweeps.Stats(r.Context(), q.Name, sweeps.StatsOptions{By: q.By, Scorer: q.Samples.Scorer})
	if err != nil {
		s.fail(w, r, sweepStatus(err), sweepError(err))
		return
	}
	per := s.opts.StepsPerPage
	sq := q.Samples
	sq.Offset, sq.Limit = (max(q.Page, 1)-1)*per, per // page ≤ MaxViewPage: no overflow
	smp, err := s.opts.Sweeps.Samples(r.Context(), q.Name, sq)
	if err != nil {
		s.fail(w, r, sweepStatus(err), sweepError(err))
		return
	}
	q.Samples.Scorer, q.Samples.Sort = smp.Scorer, cmp.Or(q.Samples.Sort, "run")
	p := &sweepPage{Title: "Sweep " + q.Name, Q: q, Groupings: sweepGroupings, Stats: st, Samples: smp, Rows: smp.Rows}
	p.Window = newWindow(smp.Total, per, q.Page, false, func(n int) string { return q.URL("page", strconv.Itoa(n)) })
	for _, g := range st.Groups {
		p.Groups = append(p.Groups, sweepGroup{GroupStats: g, RunsView: newGroupView(g.Runs), Pass: passRows(g)})
	}
	s.render(w, r, "sweep", p)
}

// sweepStatus is the status of a sweep that cannot be read: 404 for an
// unknown sweep, 400 for a query it cannot answer, 500 for a store
// failure.
func sweepStatus(err error) int {
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, sweeps.ErrInvalidQuery):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// sweepError is the message of a sweep that cannot be read: a query it
// cannot answer names the URL parameter (sort="x": expected ...).
func sweepError(err error) error {
	var q *sweeps.QueryError
	if errors.As(err, &q) {
		return fmt.Errorf("%s=%q: %s", q.Field, q.Value, q.Reason)
	}
	return err
}

// passRows pairs a group's pass@k and pass^k by k.
func passRows(g *sweeps.GroupStats) []passRow {
	var out []passRow
	for i := range g.PassAtK {
		row := passRow{K: g.PassAtK[i].K, At: &g.PassAtK[i]}
		if j := slices.IndexFunc(g.PassHatK, func(p sweeps.PassAtK) bool { return p.K == row.K }); j >= 0 {
			row.Hat = &g.PassHatK[j]
		}
		out = append(out, row)
	}
	return out
}
