package view

import (
	"context"
	"fmt"
	"net/http"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runstats"
)

// statsPage is the data of the statistics page.
type statsPage struct {
	Title  string
	Q      listQuery
	Groups []groupView
	Runs   int
	Sweeps bool
}

// groupView is one group's statistics and its charts.
type groupView struct {
	*runstats.Group
	Stops                       chart
	StepsHist, TokensHist, Cost chart
	Accuracy                    *runstats.Estimate
	// Listed lists at most maxListed unfinished runs; MoreUnfinished
	// counts the others.
	Listed         []string
	MoreUnfinished int
}

const maxListed = 100

// newGroupView is a group's statistics with its charts.
func newGroupView(g *runstats.Group) groupView {
	gv := groupView{Group: g, Stops: stopChart(g), StepsHist: histogram(g.Samples.Steps, false),
		TokensHist: histogram(g.Samples.Tokens, false), Cost: histogram(g.Samples.CostUSD, true)}
	gv.Listed = g.UnfinishedRuns[:min(len(g.UnfinishedRuns), maxListed)]
	gv.MoreUnfinished = len(g.UnfinishedRuns) - len(gv.Listed)
	return gv
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	q, err := parseList(r.URL.Query())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	runs, anns, err := s.statsRuns(r.Context(), q)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	var hashes map[string]string
	if q.By == runstats.ByHash {
		if hashes, err = runstats.AgentHashes(r.Context(), s.opts.Store, runs); err != nil {
			s.fail(w, r, http.StatusInternalServerError, err)
			return
		}
	}
	key := runstats.KeyBy(q.By, hashes)
	p := &statsPage{Title: "Statistics", Q: q, Runs: len(runs), Sweeps: s.opts.Sweeps != nil}
	for _, g := range runstats.Compute(runs, key) {
		gv := newGroupView(g)
		if anns != nil {
			gv.Accuracy = runstats.Accuracy(scoreSamples(runs, anns, key, g.Group))
		}
		p.Groups = append(p.Groups, gv)
	}
	s.render(w, r, "stats", p)
}

// statsRuns are the runs the statistics cover: those the filters select
// (every one, with totals), or a sweep's with its annotations.
func (s *Server) statsRuns(ctx context.Context, q listQuery) ([]polyloop.RunSummary, map[string]Annotation, error) {
	f := q.filter()
	if q.Sweep == "" {
		runs, err := runstats.List(ctx, s.opts.Store, f)
		return runs, nil, err
	}
	if s.opts.Sweeps == nil {
		return nil, nil, fmt.Errorf("sweep=%q: this view has no sweeps", q.Sweep)
	}
	all, anns, err := s.opts.Sweeps.Runs(ctx, q.Sweep)
	if err != nil {
		return nil, nil, err
	}
	var runs []polyloop.RunSummary
	for _, r := range all {
		if f.Matches(r) {
			runs = append(runs, r)
		}
	}
	return runs, anns, nil
}

// scoreSamples are the first scores of a group's finished runs, the last
// attempt of each agent's task and epoch only, clustered by task.
func scoreSamples(runs []polyloop.RunSummary, anns map[string]Annotation, groupOf func(polyloop.RunSummary) string, group string) []runstats.ScoreSample {
	type key struct {
		agent, task string
		epoch       int
	}
	last := map[key]Annotation{}
	var order []key
	for _, r := range runs {
		a, ok := anns[r.RunID]
		if !ok || !r.Finished || len(a.Scores) == 0 || groupOf(r) != group {
			continue
		}
		k := key{r.Agent, a.Task, a.Epoch}
		prev, seen := last[k]
		if !seen {
			order = append(order, k)
		}
		if !seen || a.Attempt > prev.Attempt {
			last[k] = a
		}
	}
	out := make([]runstats.ScoreSample, 0, len(order))
	for _, k := range order {
		out = append(out, runstats.ScoreSample{Cluster: k.task, Value: last[k].Scores[0].Value})
	}
	return out
}

// sweepsPage is the data of the sweeps page.
type sweepsPage struct {
	Title  string
	Sweeps []Sweep
}

func (s *Server) sweeps(w http.ResponseWriter, r *http.Request) {
	p := &sweepsPage{Title: "Sweeps"}
	if s.opts.Sweeps != nil {
		var err error
		if p.Sweeps, err = s.opts.Sweeps.List(r.Context()); err != nil {
			s.fail(w, r, http.StatusInternalServerError, err)
			return
		}
	}
	s.render(w, r, "sweeps", p)
}
