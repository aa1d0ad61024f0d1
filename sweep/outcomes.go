package sweep

import (
	"context"
	"math"
	"slices"

	"github.com/polyloop/polyloop/sweep/ledger"
)

// coordinates reads the sweep's ledger a page at a time and calls each
// with the attempts of every coordinate, ordered by attempt.
func coordinates(ctx context.Context, store Store, name string, each func(states []ledger.State)) error {
	var coord []ledger.State
	flush := func() {
		if len(coord) > 0 {
			slices.SortFunc(coord, func(a, b ledger.State) int { return a.Attempt - b.Attempt })
			each(coord)
			coord = nil
		}
	}
	after := ""
	for {
		page, err := store.Page(ctx, name, after, statsPage)
		if err != nil {
			return err
		}
		for _, s := range page {
			if len(coord) > 0 && coord[0].Coord != s.Coord {
				flush()
			}
			coord = append(coord, s)
		}
		if len(page) < statsPage {
			break
		}
		after = page[len(page)-1].RunID
	}
	flush()
	return nil
}

// settled reports whether a coordinate's last attempt settled it: its run
// finished and is not waiting for a retry.
func settled(last ledger.State, retry RetryPolicy) bool {
	r := last.Run
	return r != nil && r.Finished && !(retry.Retried(r.StopReason) && last.Attempt < retry.Attempts)
}

// scoreOf is the score of scorer among a state's scores.
func scoreOf(st ledger.State, scorer string) (float64, bool) {
	i := slices.IndexFunc(st.Scores, func(s ledger.Score) bool { return s.Scorer == scorer })
	if i < 0 {
		return 0, false
	}
	return st.Scores[i].Value, true
}

// passTable counts, per agent and task, the scored epochs and those that
// passed (a score of 1), in the order the pairs were met: sums over them
// run in that order, the same bits on every call.
type passTable struct {
	at    map[string]*passCount
	order []*passCount
}

type passCount struct{ n, c int }

func (p *passTable) add(agentHash, task string, v float64) {
	if p.at == nil {
		p.at = map[string]*passCount{}
	}
	key := agentHash + "\x00" + task
	pc := p.at[key]
	if pc == nil {
		pc = &passCount{}
		p.at[key] = pc
		p.order = append(p.order, pc)
	}
	pc.n++
	if v >= 1-1e-9 {
		pc.c++
	}
}

// estimates averages estimate(n, c, k) over the pairs with n ≥ k, for
// k = 1 … epochs, with the standard error of each mean.
func (p *passTable) estimates(epochs int, estimate func(n, c, k int) float64) []PassAtK {
	var out []PassAtK
	for k := 1; k <= epochs; k++ {
		var vals []float64
		for _, pc := range p.order {
			if pc.n >= k {
				vals = append(vals, estimate(pc.n, pc.c, k))
			}
		}
		if len(vals) == 0 {
			continue
		}
		e := PassAtK{K: k, Pairs: len(vals)}
		for _, v := range vals {
			e.Mean += v
		}
		e.Mean /= float64(len(vals))
		if len(vals) > 1 {
			var ss float64
			for _, v := range vals {
				ss += (v - e.Mean) * (v - e.Mean)
			}
			se := math.Sqrt(ss / float64(len(vals)-1) / float64(len(vals)))
			e.SE = &se
		}
		out = append(out, e)
	}
	return out
}

// passEstimate is the unbiased pass@k estimate from n samples of which c
// pass: 1 − C(n−c, k)/C(n, k), computed as a product to stay exact for
// small n.
func passEstimate(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	fail := 1.0
	for i := n - c + 1; i <= n; i++ {
		fail *= 1 - float64(k)/float64(i)
	}
	return 1 - fail
}

// passHatEstimate is the unbiased pass^k estimate from n samples of which
// c pass: the chance that k drawn without replacement all pass,
// C(c, k)/C(n, k) = Π_{i<k} (c−i)/(n−i).
func passHatEstimate(n, c, k int) float64 {
	if c < k {
		return 0
	}
	all := 1.0
	for i := 0; i < k; i++ {
		all *= float64(c-i) / float64(n-i)
	}
	return all
}
