package polyloop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/polyloop/polyloop"
)

// stepView is a ContextView whose versions are added by write id, like a
// view store: adding twice under one id gives the version of the first.
type stepView struct {
	mu       sync.Mutex
	versions []polyloop.ViewContent // versions[i] is version i
	byWrite  map[string]int64
	fail     error // CurrentView fails with it when set
	current  int   // CurrentView calls
}

func newStepView() *stepView {
	return &stepView{versions: []polyloop.ViewContent{{Name: "notes"}}, byWrite: map[string]int64{}}
}

func (v *stepView) Describe() polyloop.Component { return polyloop.Component{Name: "stepView"} }

func (v *stepView) CurrentView(ctx context.Context) (polyloop.ViewContent, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.current++
	if v.fail != nil {
		return polyloop.ViewContent{}, v.fail
	}
	return v.versions[len(v.versions)-1], nil
}

func (v *stepView) ViewVersion(ctx context.Context, n int64) (polyloop.ViewContent, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if n < 0 || n >= int64(len(v.versions)) {
		return polyloop.ViewContent{}, fmt.Errorf("stepView: no version %d", n)
	}
	return v.versions[n], nil
}

// add makes a new version holding the last one's entries and e.
func (v *stepView) add(writeID string, e polyloop.ViewEntry) int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	if n, ok := v.byWrite[writeID]; ok {
		return n
	}
	last := v.versions[len(v.versions)-1]
	next := polyloop.ViewContent{Name: last.Name, Version: last.Version + 1, Entries: append(slices.Clone(last.Entries), e)}
	v.versions = append(v.versions, next)
	v.byWrite[writeID] = next.Version
	return next.Version
}

// funcMaintainer is a Maintainer made of a function.
type funcMaintainer struct {
	mu    sync.Mutex
	calls int
	fn    func(ctx context.Context, s polyloop.MaintainedStep) error
}

func (m *funcMaintainer) Describe() polyloop.Component {
	return polyloop.Component{Name: "funcMaintainer"}
}

func (m *funcMaintainer) Maintain(ctx context.Context, s polyloop.MaintainedStep) error {
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	return m.fn(ctx, s)
}

// counter counts calls by name.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
}

func (c *counter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

func (c *counter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = nil
}

// requestLog wraps a model client and keeps, by call id, the messages of
// each request.
type requestLog struct {
	polyloop.ModelClient
	mu   sync.Mutex
	reqs map[string][]polyloop.Message
}

func (l *requestLog) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	l.mu.Lock()
	if l.reqs == nil {
		l.reqs = map[string][]polyloop.Message{}
	}
	l.reqs[fmt.Sprintf("%d", req.Step)] = slices.Clone(req.Messages)
	l.mu.Unlock()
	return l.ModelClient.Complete(ctx, req)
}

func (l *requestLog) Describe() polyloop.Component { return polyloop.Describe(l.ModelClient) }

// byStep returns the messages of the last request of each step, encoded.
func (l *requestLog) byStep() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]string{}
	for k, msgs := range l.reqs {
		b, _ := json.Marshal(msgs)
		out[k] = string(b)
	}
	return out
}

// viewEntry is an entry the fake maintainer shows.
func viewEntry(step int) polyloop.ViewEntry {
	return polyloop.ViewEntry{Namespace: "notes", Key: fmt.Sprintf("k%d", step), Version: 1,
		Value: json.RawMessage(fmt.Sprintf(`"learnt at step %d"`, step))}
}
