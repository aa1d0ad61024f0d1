// Package runfixture writes runs into a store for the tests of show, stats
// and view: real runs of a scripted model and Go-function tools through
// the library (batches, a not-executed action with its audit text, a crash
// resumed with a replay, a resume with a changed configuration, unfinished
// runs), so that what the tests read is what the library writes.
package runfixture

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/scriptmodel"
)

// Base is the time of the first record a fixture writes.
var Base = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// Clock is a clock that moves 1 ms per reading, so that each Append has its
// own timestamp; Skip jumps ahead (the gap before a resume).
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// Skip moves the clock ahead by d.
func (c *Clock) Skip(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// EchoArgs are the arguments of the echo tool.
type EchoArgs struct {
	Text string `json:"text"`
}

// Executor returns the fixture's tools: echo (replay_safe) answers its
// text; fail (never_replay) fails with its text, an executed action.
func Executor() *funcexec.Executor {
	return withTools(funcexec.New())
}

// DelegatingExecutor is Executor with one more tool, delegate
// (replay_safe), which runs a child agent on st answering "child: TEXT" and
// receives its answer.
func DelegatingExecutor(st polyloop.Store, clock *Clock) *funcexec.Executor {
	ex := withTools(funcexec.New())
	must(funcexec.Register(ex, "delegate", "Asks a child agent.", polyloop.ReplaySafe,
		func(ctx context.Context, a EchoArgs) (string, error) {
			child := polyloop.Child{Runner: Runner(st, clock, 0.000001, scriptmodel.Reply("child: "+a.Text)), Agent: Agent("helper", "You help.")}
			return polyloop.InvokeChild(ctx, child, polyloop.Task{Input: a.Text}, polyloop.Receive[string]{
				Succeeded: func(r polyloop.RunResult) (string, error) { return r.FinalAnswer, nil },
			})
		}))
	return ex
}

func withTools(ex *funcexec.Executor) *funcexec.Executor {
	must(funcexec.Register(ex, "echo", "Answers its text.", polyloop.ReplaySafe,
		func(_ context.Context, a EchoArgs) (string, error) { return a.Text, nil }))
	must(funcexec.Register(ex, "fail", "Fails with its text.", polyloop.NeverReplay,
		func(_ context.Context, a EchoArgs) (string, error) { return "", errors.New(a.Text) }))
	return ex
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// Agent is the fixture's agent with the given name and system prompt.
func Agent(name, system string) polyloop.Agent {
	return polyloop.Agent{Name: name, System: system, Tools: Executor().ToolSpecs(), Limits: polyloop.Limits{MaxSteps: 20}}
}

// Runner runs turns on st with the fixture's tools and clock.
func Runner(st polyloop.Store, clock *Clock, cost float64, turns ...scriptmodel.Turn) *polyloop.Runner {
	return &polyloop.Runner{
		Model:    scriptmodel.NewWithOptions(scriptmodel.Options{CostPerToken: cost}, turns...),
		Parser:   Parser{},
		Executor: Executor(),
		Store:    st,
		Clock:    clock.Now,
	}
}

// Parser turns every tool call of a reply into one action of a batch; a
// reply without tool calls is the final answer, unless its text starts
// with "?": then it is Invalid, with the text as feedback.
type Parser struct{}

// Parse implements polyloop.DecisionParser.
func (Parser) Parse(r polyloop.ModelReply) polyloop.Decision {
	if len(r.ToolCalls) == 0 {
		if strings.HasPrefix(r.Text, "?") {
			return polyloop.Invalid{Feedback: "not understood: " + r.Text}
		}
		return polyloop.Final{Answer: r.Text}
	}
	var act polyloop.Act
	for _, c := range r.ToolCalls {
		act.Actions = append(act.Actions, polyloop.Action{CallID: c.ID, Tool: c.Name, Args: c.Args})
	}
	return act
}

// Describe implements polyloop.Describer.
func (Parser) Describe() polyloop.Component { return polyloop.Component{Name: "runfixture.Parser"} }

// Echo is a turn calling echo with text.
func Echo(id, text string) scriptmodel.Turn {
	return scriptmodel.Call(id, "echo", EchoArgs{Text: text})
}

// Batch is a turn of several tool calls at once.
func Batch(turns ...scriptmodel.Turn) scriptmodel.Turn {
	var t scriptmodel.Turn
	for _, c := range turns {
		t.ToolCalls = append(t.ToolCalls, c.ToolCalls...)
	}
	return t
}

// Run runs one agent to its end and fails the test on an error.
func Run(tb testing.TB, r *polyloop.Runner, id string, agent polyloop.Agent, task string) polyloop.RunResult {
	tb.Helper()
	res, err := r.Run(context.Background(), id, agent, polyloop.Task{Input: task})
	if err != nil {
		tb.Fatalf("run %s: %v", id, err)
	}
	return res
}

// Crashed runs an agent on a store that crashes once it has accepted
// records records of the run: the run is left unfinished, as a killed
// process leaves it.
func Crashed(tb testing.TB, st polyloop.Store, clock *Clock, records int, id string, agent polyloop.Agent, task string, turns ...scriptmodel.Turn) {
	tb.Helper()
	faulty := &polylooptest.FaultyStore{Store: st, CrashAfter: records}
	_, err := Runner(faulty, clock, 0.000001, turns...).Run(context.Background(), id, agent, polyloop.Task{Input: task})
	if !errors.Is(err, polylooptest.ErrCrashed) {
		tb.Fatalf("run %s on a crashing store: %v, want a crash", id, err)
	}
}

// IDs of the runs Populate writes.
const (
	BatchRun      = "batch-1"
	ResumedRun    = "resumed-1"
	OverriddenRun = "override-1"
	UnfinishedRun = "unfinished-1"
	FailedRun     = "failed-1"
	ParentRun     = "parent-1"
)

// Populate writes the fixture's runs into st, one after another in time:
//   - BatchRun (agent alpha): a step with a batch of two calls, echo and an
//     unknown tool (not_executed: synthetic observation, audit text), a
//     step with a failing tool, and a final answer;
//   - ResumedRun (alpha): killed during step 2's action, resumed an hour
//     later (the action replayed), completed;
//   - OverriddenRun (beta): killed, resumed with a changed system prompt
//     (a config_override), completed;
//   - UnfinishedRun (beta): killed during step 2's action, left so;
//   - FailedRun (beta): the model fails at step 2 (llm_error), cost unknown;
//   - ParentRun (gamma): delegates to a child run (agent helper), receives
//     its answer, completes.
func Populate(tb testing.TB, st polyloop.Store) *Clock {
	tb.Helper()
	ctx := context.Background()
	clock := NewClock(Base)
	alpha, beta := Agent("alpha", "You echo."), Agent("beta", "You echo twice.")
	Run(tb, Runner(st, clock, 0.000001,
		Batch(Echo("c1", "hello"), scriptmodel.Call("c2", "nosuch", EchoArgs{Text: "x"})),
		scriptmodel.Call("c3", "fail", EchoArgs{Text: "disk full"}),
		scriptmodel.Reply("done")), BatchRun, alpha, "Say hello, then fail.")

	clock.Skip(time.Minute)
	resumed := []scriptmodel.Turn{Echo("c1", "one"), Echo("c2", "two"), scriptmodel.Reply("two echoed")}
	Crashed(tb, st, clock, 8, ResumedRun, alpha, "Echo one and two.", resumed...)
	clock.Skip(time.Hour)
	if _, err := Runner(st, clock, 0.000001, resumed...).Resume(ctx, ResumedRun, alpha); err != nil {
		tb.Fatalf("resume %s: %v", ResumedRun, err)
	}

	clock.Skip(time.Minute)
	over := []scriptmodel.Turn{Echo("c1", "a"), scriptmodel.Reply("a echoed")}
	Crashed(tb, st, clock, 6, OverriddenRun, beta, "Echo a.", over...)
	clock.Skip(2 * time.Hour)
	changed := beta
	changed.System = "You echo, carefully."
	if _, err := Runner(st, clock, 0.000001, over...).ResumeWith(ctx, OverriddenRun, changed, polyloop.ResumeOptions{AllowConfigChange: true}); err != nil {
		tb.Fatalf("resume %s with a changed configuration: %v", OverriddenRun, err)
	}

	clock.Skip(time.Minute)
	Crashed(tb, st, clock, 8, UnfinishedRun, beta, "Echo x and y.", Echo("c1", "x"), Echo("c2", "y"), scriptmodel.Reply("done"))

	clock.Skip(time.Minute)
	failing := scriptmodel.NewWithOptions(scriptmodel.Options{FailOnCall: 2, FailErr: errors.New("503 from the provider")},
		Echo("c1", "z"), scriptmodel.Reply("never"))
	r := Runner(st, clock, 0)
	r.Model = failing
	Run(tb, r, FailedRun, beta, "Echo z.")

	clock.Skip(time.Minute)
	parent := Runner(st, clock, 0.000001, scriptmodel.Call("c1", "delegate", EchoArgs{Text: "find it"}), scriptmodel.Reply("found"))
	parent.Executor = DelegatingExecutor(st, clock)
	gamma := Agent("gamma", "You delegate.")
	gamma.Tools = DelegatingExecutor(st, clock).ToolSpecs()
	Run(tb, parent, ParentRun, gamma, "Find it.")
	return clock
}
