package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/toolcallparser"
)

// faultModel answers a task "n" with a call double(n), then the tool's
// observation as the final answer (plus one for the tasks wrong names);
// the first call of the attempts fail names fails, as a model service
// would.
type faultModel struct {
	fail  func(task string, epoch, attempt int) bool
	wrong func(task string) bool
	delay time.Duration
	// status, when set, is the HTTP status of the failures (429 for a
	// rate limit).
	status int
	calls  atomic.Int64
}

// httpError is a model failure with an HTTP status, as the remote clients
// report it.
type httpError struct{ status int }

func (e *httpError) Error() string { return "HTTP " + strconv.Itoa(e.status) }
func (e *httpError) DiagFields() map[string]string {
	return map[string]string{"http_status": strconv.Itoa(e.status)}
}

func (m *faultModel) Describe() polyloop.Component { return polyloop.Component{Name: "faultModel"} }

func (m *faultModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	m.calls.Add(1)
	ref, err := ParseRunID(req.RunID)
	if err != nil {
		return polyloop.ModelReply{}, err
	}
	if m.delay > 0 {
		t := time.NewTimer(m.delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return polyloop.ModelReply{}, ctx.Err()
		case <-t.C:
		}
	}
	usage := polyloop.Usage{InputTokens: 10, OutputTokens: 5}
	if req.Step == 1 {
		if m.fail != nil && m.fail(ref.TaskKey, ref.Epoch, ref.Attempt) {
			if m.status != 0 {
				return polyloop.ModelReply{}, &httpError{status: m.status}
			}
			return polyloop.ModelReply{}, errors.New("injected model failure")
		}
		n := req.Messages[len(req.Messages)-1].Content
		args, _ := json.Marshal(map[string]any{"n": json.Number(n)})
		return polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{{ID: "c1", Name: "double", Args: args}}, Usage: usage, Attempts: 1}, nil
	}
	obs := req.Messages[len(req.Messages)-1].Content
	if m.wrong != nil && m.wrong(ref.TaskKey) {
		obs += "1"
	}
	return polyloop.ModelReply{Text: obs, Usage: usage, Attempts: 1}, nil
}

// doubler is the executor: double(n) is 2n.
func doubler() *funcexec.Executor {
	e := funcexec.New()
	funcexec.MustRegister(e, "double", "doubles n", polyloop.ReplaySafe, func(_ context.Context, a struct {
		N int `json:"n"`
	}) (string, error) {
		return strconv.Itoa(2 * a.N), nil
	})
	return e
}

func testAgent(name string, m polyloop.ModelClient) *Agent {
	ex := doubler()
	return &Agent{
		Agent:    polyloop.Agent{Name: name, Limits: polyloop.Limits{MaxSteps: 5}, Model: polyloop.ModelParams{Provider: "script", Model: "fault"}},
		Model:    m,
		Parser:   toolcallparser.New(toolcallparser.Options{Tools: ex.ToolSpecs()}),
		Executor: ex,
	}
}

// numberTasks are tasks t1…tn whose input is their number and target its
// double.
func numberTasks(n int) TaskList {
	var out TaskList
	for i := 1; i <= n; i++ {
		out = append(out, Task{ID: fmt.Sprintf("t%d", i), Input: strconv.Itoa(i), Target: []string{strconv.Itoa(2 * i)}})
	}
	return out
}

// eventLog keeps the events of a sweep.
type eventLog struct {
	mu  sync.Mutex
	all []Event
}

func (l *eventLog) add(ev Event) {
	l.mu.Lock()
	l.all = append(l.all, ev)
	l.mu.Unlock()
}

func (l *eventLog) count(kind EventKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.all {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}
