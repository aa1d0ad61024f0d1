package view

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/trajectory"
)

// runPage is the data of the trajectory page.
type runPage struct {
	Title string
	T     *trajectory.Trajectory
	Ann   *Annotation
	// Full shows texts whole; FullURL is the page with full texts.
	Full    bool
	FullURL string
	// Live is the URL of the page's event stream (unfinished runs).
	Live string
	// Timeline is the resume history drawn as a bar, Takeovers the lease
	// take-overs marked on it.
	Timeline  []segment
	Takeovers []mark
}

// segment is one invocation on the timeline, as a share of the records,
// with the lease take-overs among its records.
type segment struct {
	trajectory.Invocation
	N           int
	Left, Width float64 // percent of the bar
	Takeovers   []*trajectory.Takeover
}

// mark is a take-over's place on the timeline.
type mark struct {
	*trajectory.Takeover
	Left float64 // percent of the bar
}

// timeline lays the invocations out along the log's records.
func timeline(t *trajectory.Trajectory) []segment {
	var out []segment
	for i, inv := range t.Invocations {
		n := int(inv.LastSeq-inv.FirstSeq) + 1
		seg := segment{Invocation: inv, N: i + 1, Left: share(inv.FirstSeq, t), Width: 100 * float64(n) / float64(max(t.Records, 1))}
		for _, k := range t.Takeovers {
			if k.Seq >= inv.FirstSeq && k.Seq <= inv.LastSeq {
				seg.Takeovers = append(seg.Takeovers, k)
			}
		}
		out = append(out, seg)
	}
	return out
}

// takeoverMarks places the take-overs on the timeline.
func takeoverMarks(t *trajectory.Trajectory) []mark {
	var out []mark
	for _, k := range t.Takeovers {
		out = append(out, mark{Takeover: k, Left: share(k.Seq, t)})
	}
	return out
}

// share is where record seq starts along the bar, in percent.
func share(seq int64, t *trajectory.Trajectory) float64 {
	return 100 * float64(seq) / float64(max(t.Records, 1))
}

// newRunPage is the trajectory page of t.
func newRunPage(t *trajectory.Trajectory) *runPage {
	return &runPage{Title: "Run " + t.RunID, T: t, Timeline: timeline(t), Takeovers: takeoverMarks(t)}
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		s.fail(w, r, http.StatusBadRequest, errors.New("no run id: /run?id=RUN_ID"))
		return
	}
	t, err := trajectory.Load(r.Context(), s.opts.Store, id)
	if err != nil {
		s.fail(w, r, notFound(err), err)
		return
	}
	p := newRunPage(t)
	p.Full = r.URL.Query().Get("full") == "1"
	p.FullURL = "/run?" + url.Values{"id": {id}, "full": {"1"}}.Encode()
	if t.Finished == nil {
		p.Live = "/live?" + url.Values{"id": {id}, "seq": {strconv.Itoa(t.Records)}}.Encode()
	}
	if s.opts.Sweeps != nil {
		anns, err := s.opts.Sweeps.Annotate(r.Context(), []string{id})
		if err != nil {
			s.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		if a, ok := anns[id]; ok {
			p.Ann = &a
		}
	}
	s.render(w, r, "run", p)
}

// comparePage is the data of the comparison page.
type comparePage struct {
	Title string
	A, B  *trajectory.Trajectory
	// Diff is polyloop.DiffRuns of the two logs: the snapshot fields that
	// differ and the first divergence.
	Diff polyloop.RunDiff
	Rows []compareRow
	Full bool
}

// compareRow is one step of both runs (either may be missing).
type compareRow struct {
	Step     int
	A, B     *trajectory.Step
	Diverges bool
}

func (s *Server) compare(w http.ResponseWriter, r *http.Request) {
	ids := [2]string{r.URL.Query().Get("a"), r.URL.Query().Get("b")}
	if ids[0] == "" || ids[1] == "" {
		s.fail(w, r, http.StatusBadRequest, errors.New("compare needs two runs: /compare?a=RUN_ID&b=RUN_ID"))
		return
	}
	var logs [2]polyloop.RunLog
	for i, id := range ids {
		log, err := polyloop.ReadLog(r.Context(), s.opts.Store, id)
		if err == nil && log.Empty() {
			err = fmt.Errorf("%w: %q", polyloop.ErrRunNotFound, id)
		}
		if err != nil {
			s.fail(w, r, notFound(err), err)
			return
		}
		log.RunID = id
		logs[i] = log
	}
	p := &comparePage{Title: "Compare " + ids[0] + " and " + ids[1], A: trajectory.Build(logs[0]), B: trajectory.Build(logs[1]),
		Diff: polyloop.DiffRuns(logs[0], logs[1]), Full: r.URL.Query().Get("full") == "1"}
	p.Rows = alignSteps(p.A, p.B, p.Diff.First)
	s.render(w, r, "compare", p)
}

// alignSteps pairs the steps of two runs by number, marking the step of
// the first divergence.
func alignSteps(a, b *trajectory.Trajectory, d *polyloop.Divergence) []compareRow {
	var rows []compareRow
	for i := 0; i < max(len(a.Steps), len(b.Steps)); i++ {
		row := compareRow{Step: i + 1}
		if i < len(a.Steps) {
			row.A, row.Step = a.Steps[i], a.Steps[i].Step
		}
		if i < len(b.Steps) {
			row.B, row.Step = b.Steps[i], b.Steps[i].Step
		}
		row.Diverges = d != nil && d.Step == row.Step
		rows = append(rows, row)
	}
	return rows
}
