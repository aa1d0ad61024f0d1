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
	// Steps are the steps of the page: Window's of T.Steps.
	Steps  []*trajectory.Step
	Window window
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

// newRunPage is page page of the trajectory page of t (0: the first of a
// finished run, the last of an unfinished one, where its steps land).
func newRunPage(t *trajectory.Trajectory, page, per int, full bool) *runPage {
	p := &runPage{Title: "Run " + t.RunID, T: t, Timeline: timeline(t), Takeovers: takeoverMarks(t), Full: full}
	p.Window = newWindow(t.StepCount, per, page, t.Finished == nil, func(n int) string { return runURL(t.RunID, n, full) })
	p.Steps = t.Steps[p.Window.From-t.FirstIndex : p.Window.To-t.FirstIndex] // t holds the page's steps (BuildPage) or all (Build)
	return p
}

// runURL is the URL of page n of a run's page.
func runURL(id string, n int, full bool) string {
	v := url.Values{"id": {id}, "page": {strconv.Itoa(n)}}
	if full {
		v.Set("full", "1")
	}
	return "/run?" + v.Encode()
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := q.Get("id")
	if id == "" {
		s.fail(w, r, http.StatusBadRequest, errors.New("no run id: /run?id=RUN_ID"))
		return
	}
	page, err := parsePage(q)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	t, err := trajectory.LoadPage(r.Context(), s.opts.Store, id, trajectory.Page{Number: page, Per: s.opts.StepsPerPage})
	if err != nil {
		s.fail(w, r, notFound(err), err)
		return
	}
	p := newRunPage(t, page, s.opts.StepsPerPage, q.Get("full") == "1")
	p.FullURL = runURL(id, p.Window.Page, true)
	if t.Finished == nil {
		p.Live = "/live?" + url.Values{"id": {id}, "seq": {strconv.Itoa(t.Records)}, "page": {strconv.Itoa(p.Window.Page)}}.Encode()
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
	// Window is the page of the rows shown; DivURL is the page that holds
	// the first divergence.
	Window window
	DivURL string
	// Files is the files that differ between the runs' environments (nil:
	// not both have one, or the view has no snapshot store).
	Files *envFiles
}

// compareRow is one step of both runs (either may be missing).
type compareRow struct {
	Step     int
	A, B     *trajectory.Step
	Diverges bool
}

func (s *Server) compare(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ids := [2]string{q.Get("a"), q.Get("b")}
	if ids[0] == "" || ids[1] == "" {
		s.fail(w, r, http.StatusBadRequest, errors.New("compare needs two runs: /compare?a=RUN_ID&b=RUN_ID"))
		return
	}
	page, err := parsePage(q)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	// Each side keeps only the page's steps (its rows pair the runs' steps
	// by their index: the page is the same page of both). The two logs are
	// read side by side as they are folded, a chunk of rows of each at a
	// time, and each fold both compares its run's steps with the other's
	// and builds its side's page: what the request holds is the page, not
	// the runs.
	ctx := r.Context()
	tp := trajectory.Page{Number: max(page, 1), Per: s.opts.StepsPerPage}
	ba, bb := trajectory.NewPageBuilder(ids[0], tp), trajectory.NewPageBuilder(ids[1], tp)
	diff, ends, err := polyloop.DiffObserve(polyloop.StreamLog(ctx, s.opts.Store, ids[0]), polyloop.StreamLog(ctx, s.opts.Store, ids[1]), ba, bb)
	if err == nil {
		for i, end := range ends {
			if end.Records == 0 {
				err = fmt.Errorf("%w: %q", polyloop.ErrRunNotFound, ids[i])
				break
			}
		}
	}
	if err != nil {
		s.fail(w, r, notFound(err), err)
		return
	}
	ts := [2]*trajectory.Trajectory{ba.Trajectory(ends[0]), bb.Trajectory(ends[1])}
	p := &comparePage{Title: "Compare " + ids[0] + " and " + ids[1], A: ts[0], B: ts[1], Diff: diff, Full: q.Get("full") == "1"}
	step := q.Get("step")
	link := func(n int) string { return compareURL(ids, n, p.Full, step) }
	n := max(p.A.StepCount, p.B.StepCount)
	p.Window = newWindow(n, s.opts.StepsPerPage, page, false, link)
	p.Rows = alignSteps(p.A, p.B, p.Diff.First, p.Window)
	if d := p.Diff.First; d != nil && d.Step >= 1 && d.Step <= n {
		// A trajectory's steps are numbered from 1 in order, one for
		// each number: step k is row k-1.
		p.DivURL = link(pageOf(d.Step-1, s.opts.StepsPerPage))
	}
	stepLink := func(n int) string { return compareURL(ids, p.Window.Page, p.Full, strconv.Itoa(n)) + "#files" }
	if p.Files, err = s.envFilesOf(ctx, ids, ts, q, stepLink); err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	s.render(w, r, "compare", p)
}

// compareURL is the URL of page n of a comparison (with the environments'
// files at step, unless "").
func compareURL(ids [2]string, n int, full bool, step string) string {
	v := url.Values{"a": {ids[0]}, "b": {ids[1]}, "page": {strconv.Itoa(n)}}
	if full {
		v.Set("full", "1")
	}
	if step != "" {
		v.Set("step", step)
	}
	return "/compare?" + v.Encode()
}

// alignSteps pairs the steps of two runs by their index in the run, for
// the rows of window w (a and b hold those steps, BuildPage), marking the
// step of the first divergence.
func alignSteps(a, b *trajectory.Trajectory, d *polyloop.Divergence, w window) []compareRow {
	var rows []compareRow
	for i := w.From; i < w.To; i++ {
		row := compareRow{Step: i + 1}
		if s := stepAt(a, i); s != nil {
			row.A, row.Step = s, s.Step
		}
		if s := stepAt(b, i); s != nil {
			row.B, row.Step = s, s.Step
		}
		row.Diverges = d != nil && d.Step == row.Step
		rows = append(rows, row)
	}
	return rows
}

// stepAt is the run's step of index i, if t holds it.
func stepAt(t *trajectory.Trajectory, i int) *trajectory.Step {
	if j := i - t.FirstIndex; j >= 0 && j < len(t.Steps) {
		return t.Steps[j]
	}
	return nil
}
